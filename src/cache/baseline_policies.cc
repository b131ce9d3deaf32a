#include "epochfs/cache/baseline_policies.h"

#include "epochfs/cache/next_use_cache.h"
#include "epochfs/cache/tier_placement.h"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

namespace epochfs::cache {
namespace {

class NoCachePolicy final : public Policy {
 public:
  explicit NoCachePolicy(uint64_t budget) : budget_(budget) {}
  const char* name() const override { return "none"; }
  uint64_t budget() const override { return budget_; }
  uint64_t resident_bytes() const override { return 0; }
  Decision OnHit(const Access&) override { return {}; }
  Decision OnMiss(const Access&, uint64_t) override { return {}; }
  void OnDropped(ObjectId) override {}
  Result<Decision> SetBudget(uint64_t bytes) override {
    budget_ = bytes;
    return Decision{};
  }

 private:
  uint64_t budget_;
};

class MinioPolicy final : public Policy {
 public:
  explicit MinioPolicy(uint64_t budget) : budget_(budget) {}
  const char* name() const override { return "minio"; }
  uint64_t budget() const override { return budget_; }
  uint64_t resident_bytes() const override { return used_; }
  Decision OnHit(const Access&) override { return {}; }
  Decision OnMiss(const Access& a, uint64_t) override {
    Decision d;
    auto it = held_.find(a.object);
    if (it != held_.end()) {  // the store lost it: forget, then treat as new
      used_ -= it->second;
      held_.erase(it);
    }
    if (a.size > 0 && used_ <= budget_ && a.size <= budget_ - used_) {
      held_.emplace(a.object, a.size);
      used_ += a.size;
      order_.push_back(a.object);
      d.admit = true;
    }
    return d;
  }
  void OnDropped(ObjectId id) override {
    auto it = held_.find(id);
    if (it == held_.end()) return;
    used_ -= it->second;
    held_.erase(it);
  }
  // A replayed trace's budget change: a smaller budget gives up the objects
  // admitted last (MinIO never chooses victims; this keeps its oldest set).
  Result<Decision> SetBudget(uint64_t bytes) override {
    Decision d;
    budget_ = bytes;
    while (used_ > budget_ && !order_.empty()) {
      const ObjectId o = order_.back();
      order_.pop_back();
      auto it = held_.find(o);
      if (it == held_.end()) continue;
      used_ -= it->second;
      held_.erase(it);
      d.evict.push_back(o);
    }
    return d;
  }

 private:
  uint64_t budget_;
  uint64_t used_ = 0;
  std::unordered_map<ObjectId, uint64_t> held_;
  std::vector<ObjectId> order_;  // admissions, oldest first (may name dropped ones)
};

// Belady's placement on the disk tier (the header's last paragraph).
class BeladyTier final : public TierPlacement {
 public:
  explicit BeladyTier(const Future& future) : disk_(0, future) {}
  uint64_t budget() const override { return disk_.budget(); }
  uint64_t used() const override { return disk_.used(); }
  bool Holds(ObjectId id) const override { return disk_.Holds(id); }
  TierDecision OnRead(const Access& a) override { return Of(disk_.OnHit(a)); }
  TierDecision OnLoaded(const Access& a) override { return Of(disk_.OnMiss(a)); }
  void OnDropped(ObjectId id) override { disk_.OnDropped(id); }
  TierDecision SetBudget(uint64_t bytes, uint64_t now_ns) override {
    return Of(disk_.SetBudget(bytes, now_ns));
  }

 private:
  static TierDecision Of(Decision d) { return TierDecision{d.admit, std::move(d.evict)}; }
  NextUseCache disk_;
};

class BeladyPolicy final : public Policy {
 public:
  BeladyPolicy(uint64_t budget, const Future& future, uint64_t request_bytes)
      : cache_(budget, future, request_bytes), tier_(future) {}
  const char* name() const override { return "belady"; }
  TierPlacement* tier_placement() override { return &tier_; }
  uint64_t budget() const override { return cache_.budget(); }
  uint64_t resident_bytes() const override { return cache_.used(); }
  Decision OnHit(const Access& a) override {
    now_ = a.now_ns;
    return cache_.OnHit(a);
  }
  Decision OnMiss(const Access& a, uint64_t) override {
    now_ = a.now_ns;
    return cache_.OnMiss(a);
  }
  void OnDropped(ObjectId id) override { cache_.OnDropped(id); }
  // A replayed trace's budget change: the furthest next uses go first.
  Result<Decision> SetBudget(uint64_t bytes) override { return cache_.SetBudget(bytes, now_); }
  void SetRequestBytes(uint64_t bytes) override { cache_.set_request_bytes(bytes); }
  Status CheckInvariants() const override { return cache_.CheckInvariants(); }

 private:
  NextUseCache cache_;
  BeladyTier tier_;
  uint64_t now_ = 0;  // the latest access's time
};

}  // namespace

std::unique_ptr<Policy> MakeNoCachePolicy(uint64_t budget_bytes) {
  return std::make_unique<NoCachePolicy>(budget_bytes);
}
std::unique_ptr<Policy> MakeMinioPolicy(uint64_t budget_bytes) {
  return std::make_unique<MinioPolicy>(budget_bytes);
}
std::unique_ptr<Policy> MakeBeladyPolicy(uint64_t budget_bytes, const Future& future,
                                         uint64_t request_bytes) {
  return std::make_unique<BeladyPolicy>(budget_bytes, future, request_bytes);
}

}  // namespace epochfs::cache
