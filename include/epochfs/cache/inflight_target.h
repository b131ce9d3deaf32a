// InFlightTarget: how many prefetch loads to keep in flight (cache.prefetch
// is the most), found from how long the loads take.
//
// On a store where each request waits (NFS, an s3 mount: a latency store)
// loads side by side take as long as one alone, and the rate grows with the
// loads in flight: prefetch should keep many. On a store whose bandwidth
// binds (a disk, a throttled device) each load in flight more lengthens all
// of them (a queue), the rate does not grow, and loads beyond the few that
// fill the store only take bandwidth from the readers' own misses and read
// ahead what may be evicted before it is read. So the target climbs while
// more in flight costs a load little, and comes back when it no longer does:
//   - the targets are levels: `start` (at most `max`), doubled at each level
//     up to `max`. The target begins at the level of `begin` (`start` unless
//     given: a level above the floor `start` saves a latency store the rounds
//     of loads a climb from `start` takes, while a queue still comes down to
//     `start` by the steps below). A level is measured over windows of
//     max(8, target) loads that started under it (older ones are ignored); the last window's mean
//     load time at each level is kept;
//   - after a window: when its mean is at least kGrowth (1.5) times the last
//     mean at the level below, the target goes down one level and holds. This
//     is checked at every window, held or not: a level reached on loads that
//     were cheap then (a run's first loads, served before the store's queue
//     or throttle set in) is left as soon as its loads cost that much more
//     than the level below's did, instead of being held for good;
//   - the window after such a step down measures the level it came down to
//     afresh and compares the level above with it (the mean it left with may
//     be from other times: a run's first loads on a cold store can be the
//     slowest of the run, and a level above compared with those would never
//     look costly). If the level above costs kGrowth times as much, the
//     target stays and checks the level below the same way, down to `start`;
//     if not, it goes back up to the level above and holds there;
//   - otherwise, not held, the target doubles, up to `max` (where it then
//     holds);
//   - a held target below `max` is probed again (doubled) after kHoldNs
//     (10 s) of loads: the store, or the readers' share of it, may have
//     changed.
// Pure arithmetic: no clock (times are the caller's), no I/O. Thread
// safety: none; the caller serialises.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace epochfs::cache {

class InFlightTarget {
 public:
  static constexpr double kGrowth = 1.5;
  static constexpr uint64_t kHoldNs = 10'000'000'000;
  static constexpr uint32_t kMinWindow = 8;

  // REQUIRES: max >= 1. `begin`: the first target, rounded down to a level
  // (start doubled), at least `start`; 0 is `start`.
  InFlightTarget(uint32_t max, uint32_t start, uint32_t begin = 0);

  uint32_t target() const { return target_; }
  // Which target a load starting now runs under: pass it back to OnLoad.
  uint64_t generation() const { return generation_; }
  // A load that started under `generation` took `duration_ns` and ended at
  // `now_ns`. True when the target changed.
  bool OnLoad(uint64_t generation, uint64_t duration_ns, uint64_t now_ns);

 private:
  // The target of level `level`: start doubled `level` times, at most max.
  uint32_t TargetOf(size_t level) const;
  // Moves to `level` at now_ns: a new generation and an empty window.
  void SetLevel(size_t level, uint64_t now_ns);

  const uint32_t max_;
  const uint32_t start_;
  uint32_t target_;
  size_t level_ = 0;
  std::vector<double> mean_at_;  // per level, the last window's mean (ns); 0: none yet
  uint64_t generation_ = 0;
  uint64_t loads_ = 0, sum_ns_ = 0;  // this window's
  bool held_ = false;
  bool checking_ = false;            // come down a level: this one is measured afresh
  bool started_ = false;             // a load was seen
  uint64_t since_ns_ = 0;            // when the target was set (or held)
};

}  // namespace epochfs::cache
