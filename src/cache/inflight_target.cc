#include "epochfs/cache/inflight_target.h"

#include <algorithm>

namespace epochfs::cache {

InFlightTarget::InFlightTarget(uint32_t max, uint32_t start)
    : max_(std::max<uint32_t>(1, max)), target_(std::clamp<uint32_t>(start, 1, max_)) {}

void InFlightTarget::Set(uint32_t target, uint64_t now_ns) {
  previous_ = target_;
  target_ = target;
  ++generation_;
  loads_ = 0;
  sum_ns_ = 0;
  since_ns_ = now_ns;
}

bool InFlightTarget::OnLoad(uint64_t generation, uint64_t duration_ns, uint64_t now_ns) {
  if (generation != generation_) return false;  // began under another target
  if (!started_) {
    started_ = true;
    since_ns_ = now_ns;
  }
  ++loads_;
  sum_ns_ += duration_ns;
  if (loads_ < std::max<uint64_t>(kMinWindow, target_)) return false;
  const double mean = static_cast<double>(sum_ns_) / static_cast<double>(loads_);
  const uint32_t was = target_;
  if (held_) {
    if (target_ < max_ && now_ns - since_ns_ >= kHoldNs) {  // probe again
      held_ = false;
      before_ns_ = mean;
      Set(std::min(max_, target_ * 2), now_ns);
    } else {
      loads_ = 0;
      sum_ns_ = 0;
    }
  } else if (before_ns_ != 0 && mean >= kGrowth * before_ns_) {
    // More in flight made each load slower: a queue, not a latency.
    held_ = true;
    Set(previous_, now_ns);
  } else if (target_ < max_) {
    before_ns_ = mean;
    Set(std::min(max_, target_ * 2), now_ns);
  } else {  // max, and it paid
    held_ = true;
    loads_ = 0;
    sum_ns_ = 0;
    since_ns_ = now_ns;
  }
  return target_ != was;
}

}  // namespace epochfs::cache
