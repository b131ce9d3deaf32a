// CacheFront (cache_front.h): the second tier's part. What the tier holds is
// decided by the placement (cache/tier_placement.h), which hears of every
// read under policy_mu_ right after the policy; its decisions and the tier's
// own news (lost copies, copies found at start, a new size) are applied here.
#include <utility>

#include "epochfs/store/cache_front.h"

namespace epochfs::store {
namespace {

LowerKey KeyOf(const GetRequest& req, const Version& v) {
  LowerKey k;
  k.rel = req.rel;
  k.offset = req.offset;
  k.length = req.length;
  k.version = v;
  return k;
}

}  // namespace

void CacheFront::SetSecondTier(SecondTier* tier) {
  std::lock_guard lock(policy_mu_);
  tier_ = tier;
  placement_ = policy_->tier_placement();
  if (placement_ == nullptr) {
    own_placement_ = cache::MakeLruTier(0);
    placement_ = own_placement_.get();
  }
  TierApplyLocked(placement_->SetBudget(tier->stats().budget, NowNs()));
  TierSyncLocked();
}

ObjectRef CacheFront::TierRead(const GetRequest& req, const Version& v) {
  if (tier_ == nullptr) return nullptr;
  ObjectRef t = tier_->Read(req.id, KeyOf(req, v), v);
  if (t) c_.tier_hits.fetch_add(1, std::memory_order_relaxed);
  return t;
}

ObjectRef CacheFront::Lookup(const LowerKey& key) {
  const cache::ObjectId id = key.Id();
  if (ObjectRef hit = ram_.Find(id);
      hit && !hit->handed_over && key.Matches(hit->version)) {
    return hit;
  }
  if (tier_ == nullptr) return nullptr;
  return tier_->Read(id, key, key.version);
}

void CacheFront::TierLocked(const GetRequest& req, const cache::Access& a, const ObjectRef& ref,
                            bool loaded) {
  if (tier_ == nullptr) return;
  TierSyncLocked();
  if (!loaded) {
    TierApplyLocked(placement_->OnRead(a));
    return;
  }
  cache::TierDecision d = placement_->OnLoaded(a);
  const bool write = d.write;
  d.write = false;
  TierApplyLocked(d);
  if (!write) {
    c_.tier_skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // A write the tier cannot take comes back as news (lost), and the
  // placement forgets it then.
  tier_->Write(a.object, KeyOf(req, ref->version), ref);
}

void CacheFront::TierApplyLocked(const cache::TierDecision& d) {
  for (cache::ObjectId victim : d.evict) tier_->Erase(victim);
}

void CacheFront::TierSyncLocked() {
  if (tier_ == nullptr) return;
  if (tier_->HasNews()) {
    TierNews news = tier_->TakeNews();
    for (cache::ObjectId id : news.lost) placement_->OnDropped(id);
    if (news.budget_changed) TierApplyLocked(placement_->SetBudget(news.budget, NowNs()));
    // Copies found at start: the placement decides which stay (none of them
    // is declared yet: least recently written last).
    for (const TierNews::Found& f : news.found) {
      cache::Access a;
      a.object = f.id;
      a.size = f.size;
      a.file = f.file;
      a.now_ns = NowNs();
      cache::TierDecision d = placement_->OnLoaded(a);
      TierApplyLocked(d);
      if (!d.write && !placement_->Holds(f.id)) tier_->Erase(f.id);
    }
  }
  std::vector<cache::ObjectId> later = placement_->TakeEvictions();
  for (cache::ObjectId id : later) tier_->Erase(id);
}

}  // namespace epochfs::store
