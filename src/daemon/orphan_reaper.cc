#include "orphan_reaper.h"

#include <chrono>

#include "epochfs/common/log.h"
#include "epochfs/store/cache_front.h"

namespace epochfs {

void OrphanReaper::Start() {
  stop_ = false;
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
      lock.unlock();
      for (const std::string& name : registry_.ReapOrphans(store::NowNs(), grace_ns_)) {
        log::Info("job " + name + ": every process exited; orphan grace over, cache released");
        if (removed_) removed_(name);
      }
      if (tick_) tick_();
      lock.lock();
    }
  });
}

void OrphanReaper::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace epochfs
