#include "orphan_reaper.h"

#include <chrono>

#include "epochfs/common/log.h"
#include "epochfs/store/cache_front.h"

namespace epochfs {

void OrphanReaper::Start() {
  ticker_.Start(std::chrono::seconds(1), [this] {
    for (const std::string& name : registry_.ReapOrphans(store::NowNs(), grace_ns_)) {
      log::Info("job " + name + ": every process exited; orphan grace over, cache released");
      if (removed_) removed_(name);
    }
    if (tick_) tick_();
  });
}

void OrphanReaper::Stop() { ticker_.Stop(); }

}  // namespace epochfs
