#include "epochfs/common/log_limit.h"

#include "epochfs/common/log.h"

namespace epochfs::log {

LogLimit::LogLimit(uint32_t per_window, uint64_t window_ns, std::function<uint64_t()> now_ns)
    : per_window_(per_window), window_ns_(window_ns), now_ns_(std::move(now_ns)) {}

std::string LogLimit::Admit(const std::string& msg) {
  std::lock_guard lock(mu_);
  const uint64_t now = now_ns_();
  if (in_window_ == 0 || now - window_start_ >= window_ns_) {
    window_start_ = now;
    in_window_ = 0;
  }
  if (in_window_ >= per_window_) {
    ++suppressed_;
    return "";
  }
  ++in_window_;
  if (suppressed_ == 0) return msg;
  std::string out = "(" + std::to_string(suppressed_) + " similar lines left out) " + msg;
  suppressed_ = 0;
  return out;
}

void LogLimit::Info(const std::string& msg) {
  if (!Enabled(Level::kInfo)) return;
  const std::string line = Admit(msg);
  if (!line.empty()) log::Info(line);
}

}  // namespace epochfs::log
