// LowerHealth (lower_health.h).
#include "epochfs/store/lower_health.h"

#include <cstdio>

#include "epochfs/common/log.h"

namespace epochfs::store {

const char* LowerCallName(LowerCall kind) {
  switch (kind) {
    case LowerCall::kLookup: return "lookup";
    case LowerCall::kStat: return "stat";
    case LowerCall::kOpen: return "open";
    case LowerCall::kRead: return "read";
    case LowerCall::kList: return "list";
    case LowerCall::kReadlink: return "readlink";
    case LowerCall::kStatfs: return "statfs";
  }
  return "?";
}

void LowerHealth::Saw(const Status& s, const std::string& what) {
  // An interrupted request tells nothing of LOWER.
  if (s.code() == Code::kInterrupted) return;
  const bool failed = s.code() == Code::kTimedOut || s.code() == Code::kIoError;
  if (failed == down_.load(std::memory_order_acquire)) return;
  std::lock_guard lk(mu_);
  if (failed == down_.load(std::memory_order_relaxed)) return;
  const auto now = std::chrono::steady_clock::now();
  if (failed) {
    since_ = now;
    down_.store(true, std::memory_order_release);
    log::Warn("LOWER is down (" + what + ": " + s.message() +
              "); files cached in memory are still served, others fail until LOWER answers");
  } else {
    const double secs = std::chrono::duration<double>(now - since_).count();
    down_.store(false, std::memory_order_release);
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", secs);
    log::Warn(std::string("LOWER answers again, after ") + text + " s down");
  }
}

LowerCallCounts LowerHealth::counts() const {
  LowerCallCounts out;
  for (size_t i = 0; i < kLowerCallKinds; ++i) {
    out.by_kind[i] = calls_[i].load(std::memory_order_relaxed);
  }
  return out;
}

double LowerHealth::down_seconds() const {
  if (!down()) return 0;
  std::lock_guard lk(mu_);
  if (!down_.load(std::memory_order_relaxed)) return 0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
}

}  // namespace epochfs::store
