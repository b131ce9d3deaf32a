#include "root_attr.h"

#include "epochfs/common/log.h"

namespace epochfs::fs {

RootAttr::RootAttr(const store::KnownLower& lower, std::chrono::milliseconds grace)
    : lower_(lower), grace_(grace) {}

RootAttr::~RootAttr() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wanted_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<struct stat> RootAttr::Get() {
  std::unique_lock lock(mu_);
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  // The stat that answers this call is the next one to start: after the one
  // under way, if any.
  const uint64_t target = done_ + (running_ ? 2 : 1);
  wanted_ = true;
  wanted_cv_.notify_one();
  auto answered = [&] { return stop_ || done_ >= target; };
  if (known_.has_value()) {
    const bool down = !last_status_.ok();  // LOWER known down: no wait at all
    // Fresh when the stat answered in time; else the last known attributes.
    done_cv_.wait_for(lock, down ? std::chrono::milliseconds(0) : grace_, answered);
    return *known_;
  }
  done_cv_.wait(lock, answered);
  if (!last_status_.ok()) return last_status_;
  if (!known_.has_value()) return Status(Code::kIoError, "unmounting");
  return *known_;
}

void RootAttr::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    wanted_cv_.wait(lock, [&] { return stop_ || wanted_; });
    if (stop_) return;
    wanted_ = false;
    running_ = true;
    lock.unlock();
    Result<struct stat> st = lower_.Stat("", store::LowerCall::kStat);
    lock.lock();
    running_ = false;
    ++done_;
    last_status_ = st.ok() ? Status::Ok() : st.status();
    if (st.ok()) {
      known_ = st.value();
      if (warned_) log::Info("LOWER's root answers again");
      warned_ = false;
    } else if (known_.has_value() && !warned_) {
      warned_ = true;
      log::Warn("LOWER's root did not answer (" + st.status().message() +
                "): its last known attributes stand until it does");
    }
    done_cv_.notify_all();
  }
}

}  // namespace epochfs::fs
