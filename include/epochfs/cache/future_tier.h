// FutureTier: the "future" policy's placement on the second (disk) tier
// (tier_placement.h), over the same declared future as its RAM tier.
//
// A NextUseCache of the tier's bytes: an object loaded from LOWER is written
// when its next declared read comes sooner than that of something the tier
// holds (or the tier has room); an object whose next read lies beyond what
// the tier can hold is bypassed: not written. Eviction: the farthest next
// declared read first (size-weighed as in RAM); objects nobody declared go
// after every declared one, least recently read first. The RAM tier holds the
// soonest of all (the policy's own NextUseCache); the tier is inclusive.
//
// Ownership: part of the FuturePolicy, which owns the DeclaredFuture both
// read; the policy calls Refile when a declaration moves an object's next
// read (its Rekey).
// Thread safety: not thread-safe, like the policy.
#pragma once

#include <cstdint>
#include <vector>

#include "epochfs/cache/declared_future.h"
#include "epochfs/cache/next_use_cache.h"
#include "epochfs/cache/tier_placement.h"

namespace epochfs::cache {

class FutureTier final : public TierPlacement {
 public:
  explicit FutureTier(DeclaredFuture& future) : future_(future), disk_(0, future) {}

  uint64_t budget() const override { return disk_.budget(); }
  uint64_t used() const override { return disk_.used(); }
  bool Holds(ObjectId id) const override { return disk_.Holds(id); }
  TierDecision OnRead(const Access& a) override;
  TierDecision OnLoaded(const Access& a) override;
  void OnDropped(ObjectId id) override;
  TierDecision SetBudget(uint64_t bytes, uint64_t now_ns) override;
  std::vector<ObjectId> TakeEvictions() override;
  // `id`'s next use changed (a declaration): filed again; with none, it is
  // evicted (TakeEvictions).
  void Refile(ObjectId id, uint64_t now_ns);
  Status CheckInvariants() const { return disk_.CheckInvariants(); }

 private:
  DeclaredFuture& future_;
  NextUseCache disk_;
  std::vector<ObjectId> pending_;  // evictions for TakeEvictions
};

}  // namespace epochfs::cache
