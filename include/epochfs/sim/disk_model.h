// DiskModel: the simulator's second tier, the daemon's disk tier on local SSD
// (docs/disk_tier.md), below the RAM store of the engine (engine.h).
//
// What it holds is decided by the policy's own TierPlacement
// (cache/tier_placement.h: the future policy's FutureTier, Belady's tier over
// the oracle) or, for a policy without one, cache::MakeLruTier: the same pure
// code the daemon's cache front runs, told the same events in the same order
// (after the RAM policy heard of the access and its decision was applied):
//   OnRead    a read served from RAM or from the disk: the placement moves the
//             object to its next use;
//   OnLoaded  an object loaded from the store (LOWER): the placement says
//             whether it is written, and what leaves the disk first.
//
// Inclusive (every policy but Belady, as the daemon's tiers): an object may be
// in RAM and on disk at once; it is written at its load from LOWER, never on
// eviction from RAM (the daemon's RAM copy may be gone by then).
// Exclusive (Belady, the two-tier reference): RAM holds the soonest next uses,
// the disk the next ones, what lies beyond neither. An object RAM admits
// leaves the disk (EnteredRam: moved up); one RAM lets go is offered to the
// disk (LeftRam: written if the placement takes it, moved down); a load RAM
// keeps is not offered to the disk. RAM and disk then act as one next-use
// cache of both sizes (for one job and equal sizes: MIN over RAM + disk).
//
// Cost of a read (Read): `latency_ms`, then its bytes at `bandwidth` on the
// disk's one link, reads served in order, any number in flight. Writes are
// counted (bytes written: SSD endurance) but take no read time (the daemon
// writes from a thread of its own). A decision is applied at once: no write
// queue, no failures.
//
// Ownership: the placement is the policy's (it must outlive the model) or
// the model's own. Thread safety: not thread-safe; one per engine run.
#pragma once

#include <cstdint>
#include <memory>

#include "epochfs/cache/policy.h"
#include "epochfs/cache/tier_placement.h"
#include "epochfs/sim/run_result.h"
#include "epochfs/sim/workload.h"

namespace epochfs::sim {

class DiskModel {
 public:
  // budget 0: no disk tier (enabled() false; nothing is held, every call
  // but Read and the counters is a no-op).
  DiskModel(const DiskSpec& spec, uint64_t budget, cache::Policy& policy, bool exclusive);

  bool enabled() const { return placement_ != nullptr; }
  bool exclusive() const { return exclusive_; }
  bool Holds(cache::ObjectId id) const { return enabled() && placement_->Holds(id); }
  // A read of `size` bytes from the disk issued at `now`: its completion time.
  uint64_t Read(uint64_t now, uint64_t size);
  // `a.object` was read (from RAM, or from the disk); `in_ram`: RAM holds it
  // once the policy's decision was applied.
  void OnRead(const cache::Access& a, bool in_ram);
  // `a.object` was loaded from LOWER (a miss or a prefetch).
  void OnLoaded(const cache::Access& a, bool in_ram);
  // RAM admitted `id` / let `a.object` go (exclusive only; no-ops otherwise).
  void EnteredRam(cache::ObjectId id);
  void LeftRam(const cache::Access& a);
  // Evictions decided outside the calls above (a declaration moved a held
  // object's next use away): drained after every event.
  void Drain();
  const DiskCounters& counters() const { return c_; }

 private:
  void Offer(const cache::Access& a);
  void Apply(const cache::TierDecision& d, uint64_t size);

  const double bandwidth_;
  const uint64_t latency_ns_;
  const bool exclusive_;
  uint64_t link_free_ = 0;
  std::unique_ptr<cache::TierPlacement> own_;
  cache::TierPlacement* placement_ = nullptr;
  DiskCounters c_;
};

}  // namespace epochfs::sim
