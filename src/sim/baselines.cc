#include "epochfs/sim/baselines.h"

#include "epochfs/cache/next_use_cache.h"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

namespace epochfs::sim {
namespace {

using cache::Access;
using cache::Decision;
using cache::ObjectId;

class NoCachePolicy final : public cache::Policy {
 public:
  explicit NoCachePolicy(uint64_t budget) : budget_(budget) {}
  const char* name() const override { return "none"; }
  uint64_t budget() const override { return budget_; }
  uint64_t resident_bytes() const override { return 0; }
  Decision OnHit(const Access&) override { return {}; }
  Decision OnMiss(const Access&, uint64_t) override { return {}; }
  void OnDropped(ObjectId) override {}

 private:
  uint64_t budget_;
};

class MinioPolicy final : public cache::Policy {
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
    if (a.size > 0 && a.size <= budget_ - used_) {
      held_.emplace(a.object, a.size);
      used_ += a.size;
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

 private:
  uint64_t budget_;
  uint64_t used_ = 0;
  std::unordered_map<ObjectId, uint64_t> held_;
};

class BeladyPolicy final : public cache::Policy {
 public:
  BeladyPolicy(uint64_t budget, const Future& future) : cache_(budget, future) {}
  const char* name() const override { return "belady"; }
  uint64_t budget() const override { return cache_.budget(); }
  uint64_t resident_bytes() const override { return cache_.used(); }
  Decision OnHit(const Access& a) override { return cache_.OnHit(a); }
  Decision OnMiss(const Access& a, uint64_t) override { return cache_.OnMiss(a); }
  void OnDropped(ObjectId id) override { cache_.OnDropped(id); }
  Status CheckInvariants() const override { return cache_.CheckInvariants(); }

 private:
  cache::NextUseCache cache_;
};

}  // namespace

std::unique_ptr<cache::Policy> MakeNoCachePolicy(uint64_t budget_bytes) {
  return std::make_unique<NoCachePolicy>(budget_bytes);
}
std::unique_ptr<cache::Policy> MakeMinioPolicy(uint64_t budget_bytes) {
  return std::make_unique<MinioPolicy>(budget_bytes);
}
std::unique_ptr<cache::Policy> MakeBeladyPolicy(uint64_t budget_bytes, const Future& future) {
  return std::make_unique<BeladyPolicy>(budget_bytes, future);
}

}  // namespace epochfs::sim
