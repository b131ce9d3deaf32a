// LogLimit: info lines that any user can cause (a refused control write) at
// most `per_window` per `window`, so that no user floods the log. The first
// line let through after a stretch of suppressed ones says how many were
// left out. `now_ns` is a monotonic clock (injectable for tests).
// Thread safety: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace epochfs::log {

class LogLimit {
 public:
  LogLimit(uint32_t per_window, uint64_t window_ns, std::function<uint64_t()> now_ns);

  // The line to log now ("" when it is suppressed): `msg`, with "(N similar
  // lines left out)" prefixed when some were.
  std::string Admit(const std::string& msg);
  // Admit, then log::Info what it returns.
  void Info(const std::string& msg);

 private:
  const uint32_t per_window_;
  const uint64_t window_ns_;
  const std::function<uint64_t()> now_ns_;
  std::mutex mu_;
  uint64_t window_start_ = 0;  // guarded by mu_
  uint32_t in_window_ = 0;     // guarded by mu_
  uint64_t suppressed_ = 0;    // guarded by mu_
};

}  // namespace epochfs::log
