// TierPlacement: which loaded objects a second tier (the disk tier, on local
// SSD) keeps, and which it lets go.
//
// Pure, like a Policy: events in, decisions out; no I/O, no clocks of its
// own. The caller (the daemon's cache front) reports, after the RAM policy
// heard of the same access:
//   OnRead    an object was read (a RAM hit, or served from the second tier):
//             a held object moves to its next use;
//   OnLoaded  an object was loaded from LOWER (a miss or a prefetch), or found
//             on disk at start: whether to write it to the tier, and what to
//             evict from the tier first;
//   OnDropped the tier lost an object outside these decisions (a checksum
//             error, a failed write, the object went stale);
//   SetBudget the tier's size changed ("auto", a full disk).
// and applies each TierDecision: the evictions, then the write.
//
// Two placements:
//   - the "future" policy's (Policy::tier_placement(), future_tier.h): keeps
//     the objects whose next declared read comes soonest within the tier's
//     bytes; an object whose next read lies beyond what the tier holds is not
//     written at all (a write costs the SSD endurance); reads nobody declared
//     use the space the declared future leaves idle, least recently used;
//   - every other policy (lru, epoch): MakeLruTier, least recently read first
//     (written when loaded from LOWER, inclusive of the RAM tier).
// Both are inclusive: an object may be in RAM and on disk at once (with one
// copy the RAM copy is gone once the kernel has it, so the disk copy is
// written at load, not on eviction from RAM).
//
// Contract: used() <= budget() after every call; a TierDecision never
// evicts an object the placement does not hold, and `write` is set only by
// OnLoaded (the object is then held).
// Thread safety: not thread-safe; the caller serialises every call (the
// cache front: under its policy lock).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "epochfs/cache/policy.h"

namespace epochfs::cache {

struct TierDecision {
  bool write = false;          // write the loaded object to the tier
  std::vector<ObjectId> evict;  // drop these from the tier first
};

class TierPlacement {
 public:
  virtual ~TierPlacement() = default;
  virtual uint64_t budget() const = 0;
  virtual uint64_t used() const = 0;
  virtual bool Holds(ObjectId id) const = 0;
  virtual TierDecision OnRead(const Access& a) = 0;
  virtual TierDecision OnLoaded(const Access& a) = 0;
  virtual void OnDropped(ObjectId id) = 0;
  virtual TierDecision SetBudget(uint64_t bytes, uint64_t now_ns) = 0;
  // Evictions decided by events outside the calls above (a declaration
  // moved a held object's next read away for good); the caller drains them
  // after every event.
  virtual std::vector<ObjectId> TakeEvictions() { return {}; }
};

// Least recently read first, job-blind: every object loaded from LOWER that
// fits is written, evicting the least recently read.
std::unique_ptr<TierPlacement> MakeLruTier(uint64_t budget_bytes);

}  // namespace epochfs::cache
