#include "epochfs/cache/future_tier.h"

#include <utility>

namespace epochfs::cache {

namespace {
TierDecision Of(Decision d) { return TierDecision{d.admit, std::move(d.evict)}; }
}  // namespace

TierDecision FutureTier::OnRead(const Access& a) {
  if (budget() == 0) return {};
  future_.Touch(a.object, a.now_ns);
  return Of(disk_.OnHit(a));
}

TierDecision FutureTier::OnLoaded(const Access& a) {
  if (budget() == 0) return {};
  future_.Touch(a.object, a.now_ns, a.size);
  return Of(disk_.OnMiss(a));
}

void FutureTier::OnDropped(ObjectId id) {
  future_.Touch(id, 0);
  disk_.OnDropped(id);
}

TierDecision FutureTier::SetBudget(uint64_t bytes, uint64_t now_ns) {
  return Of(disk_.SetBudget(bytes, now_ns));
}

std::vector<ObjectId> FutureTier::TakeEvictions() { return std::exchange(pending_, {}); }

void FutureTier::Refile(ObjectId id, uint64_t now_ns) {
  if (!disk_.Holds(id)) return;
  Decision d;
  disk_.Rekey(id, now_ns, &d);
  pending_.insert(pending_.end(), d.evict.begin(), d.evict.end());
}

}  // namespace epochfs::cache
