// LRU: the job-blind baseline (what the host page cache approximates).
#include <list>
#include <unordered_map>

#include "epochfs/cache/policy.h"

namespace epochfs::cache {
namespace {

class LruPolicy final : public Policy {
 public:
  explicit LruPolicy(uint64_t budget) : budget_(budget) {}

  const char* name() const override { return "lru"; }
  uint64_t budget() const override { return budget_; }
  uint64_t resident_bytes() const override { return used_; }

  Decision OnHit(const Access& a) override {
    auto it = index_.find(a.object);
    if (it != index_.end()) order_.splice(order_.begin(), order_, it->second);
    return {};
  }

  Decision OnMiss(const Access& a, uint64_t /*load_ns*/) override {
    Decision d;
    if (index_.count(a.object) != 0 || a.size > budget_) return d;
    while (used_ + a.size > budget_) {
      const Entry& victim = order_.back();
      d.evict.push_back(victim.id);
      used_ -= victim.size;
      index_.erase(victim.id);
      order_.pop_back();
    }
    order_.push_front({a.object, a.size});
    index_[a.object] = order_.begin();
    used_ += a.size;
    d.admit = true;
    return d;
  }

  // Shrinking evicts least recently used objects until the rest fits.
  Result<Decision> SetBudget(uint64_t bytes) override {
    Decision d;
    budget_ = bytes;
    while (used_ > budget_) {
      const Entry& victim = order_.back();
      d.evict.push_back(victim.id);
      used_ -= victim.size;
      index_.erase(victim.id);
      order_.pop_back();
    }
    return d;
  }

  Status CheckInvariants() const override {
    uint64_t sum = 0;
    for (const Entry& e : order_) {
      auto it = index_.find(e.id);
      if (it == index_.end() || &*it->second != &e) return Internal("invariant: lru index");
      sum += e.size;
    }
    if (index_.size() != order_.size()) return Internal("invariant: lru index size");
    if (sum != used_) return Internal("invariant: lru used bytes");
    if (used_ > budget_) return Internal("invariant: lru over budget");
    return Status::Ok();
  }

  void OnDropped(ObjectId id) override {
    auto it = index_.find(id);
    if (it == index_.end()) return;
    used_ -= it->second->size;
    order_.erase(it->second);
    index_.erase(it);
  }

 private:
  struct Entry {
    ObjectId id;
    uint64_t size;
  };
  uint64_t budget_;
  uint64_t used_ = 0;
  std::list<Entry> order_;  // front = most recently used
  std::unordered_map<ObjectId, std::list<Entry>::iterator> index_;
};

}  // namespace

std::unique_ptr<Policy> MakeLruPolicy(uint64_t budget_bytes) {
  return std::make_unique<LruPolicy>(budget_bytes);
}

}  // namespace epochfs::cache
