#include "epochfs/cache/inflight_target.h"

#include <algorithm>

namespace epochfs::cache {

InFlightTarget::InFlightTarget(uint32_t max, uint32_t start, uint32_t begin)
    : max_(std::max<uint32_t>(1, max)),
      start_(std::clamp<uint32_t>(start, 1, max_)),
      target_(start_),
      mean_at_(1, 0.0) {
  // The highest level at or below `begin`. Nothing is measured below it yet:
  // its first window only climbs, and a queue is found one level above it,
  // from where the steps down (measuring each level afresh) go on to `start`.
  size_t level = 0;
  while (TargetOf(level + 1) <= begin && TargetOf(level + 1) > TargetOf(level)) ++level;
  if (level != 0) SetLevel(level, 0);
}

uint32_t InFlightTarget::TargetOf(size_t level) const {
  uint64_t t = start_;
  for (size_t i = 0; i < level && t < max_; ++i) t *= 2;
  return static_cast<uint32_t>(std::min<uint64_t>(t, max_));
}

void InFlightTarget::SetLevel(size_t level, uint64_t now_ns) {
  level_ = level;
  if (mean_at_.size() <= level_) mean_at_.resize(level_ + 1, 0.0);
  target_ = TargetOf(level_);
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
  mean_at_[level_] = mean;
  const bool top = target_ >= max_;
  if (checking_) {
    // Just come down from the level above: this window measured this level
    // afresh, so the two are compared on loads of the same time.
    if (mean_at_[level_ + 1] >= kGrowth * mean) {
      // The level above did cost that much more: stay, and check the level
      // below in turn (its mean may be from other times, such as the run's
      // first loads on a cold store).
      if (level_ > 0) {
        SetLevel(level_ - 1, now_ns);
      } else {
        checking_ = false;
        loads_ = 0;
        sum_ns_ = 0;
      }
    } else {  // it paid after all: back to it, held
      checking_ = false;
      SetLevel(level_ + 1, now_ns);
    }
  } else if (level_ > 0 && mean_at_[level_ - 1] != 0 && mean >= kGrowth * mean_at_[level_ - 1]) {
    // More in flight than the level below made each load slower: a queue,
    // not a latency. Down a level, held, and measured there afresh (above).
    held_ = true;
    checking_ = true;
    SetLevel(level_ - 1, now_ns);
  } else if (held_) {
    if (!top && now_ns - since_ns_ >= kHoldNs) {  // probe again
      held_ = false;
      SetLevel(level_ + 1, now_ns);
    } else {
      loads_ = 0;
      sum_ns_ = 0;
    }
  } else if (!top) {
    SetLevel(level_ + 1, now_ns);
  } else {  // max, and it paid
    held_ = true;
    loads_ = 0;
    sum_ns_ = 0;
    since_ns_ = now_ns;
  }
  return target_ != was;
}

}  // namespace epochfs::cache
