// MakeLruTier (tier_placement.h): the second tier of every policy without a
// declared future, least recently read first.
#include <list>
#include <unordered_map>

#include "epochfs/cache/tier_placement.h"

namespace epochfs::cache {
namespace {

class LruTier final : public TierPlacement {
 public:
  explicit LruTier(uint64_t budget) : budget_(budget) {}
  uint64_t budget() const override { return budget_; }
  uint64_t used() const override { return used_; }
  bool Holds(ObjectId id) const override { return index_.count(id) != 0; }

  TierDecision OnRead(const Access& a) override {
    auto it = index_.find(a.object);
    if (it != index_.end()) order_.splice(order_.begin(), order_, it->second);
    return {};
  }
  TierDecision OnLoaded(const Access& a) override {
    TierDecision d;
    if (Holds(a.object)) {
      OnRead(a);
      return d;
    }
    if (a.size > budget_) return d;
    Shrink(budget_ - a.size, &d);
    order_.push_front({a.object, a.size});
    index_[a.object] = order_.begin();
    used_ += a.size;
    d.write = true;
    return d;
  }
  void OnDropped(ObjectId id) override {
    auto it = index_.find(id);
    if (it == index_.end()) return;
    used_ -= it->second->size;
    order_.erase(it->second);
    index_.erase(it);
  }
  TierDecision SetBudget(uint64_t bytes, uint64_t /*now_ns*/) override {
    TierDecision d;
    budget_ = bytes;
    Shrink(bytes, &d);
    return d;
  }

 private:
  struct Held {
    ObjectId id;
    uint64_t size;
  };
  // Evicts the least recently read until used_ <= limit.
  void Shrink(uint64_t limit, TierDecision* d) {
    while (used_ > limit && !order_.empty()) {
      const Held h = order_.back();
      d->evict.push_back(h.id);
      OnDropped(h.id);
    }
  }
  uint64_t budget_;
  uint64_t used_ = 0;
  std::list<Held> order_;  // most recently read first
  std::unordered_map<ObjectId, std::list<Held>::iterator> index_;
};

}  // namespace

std::unique_ptr<TierPlacement> MakeLruTier(uint64_t budget_bytes) {
  return std::make_unique<LruTier>(budget_bytes);
}

}  // namespace epochfs::cache
