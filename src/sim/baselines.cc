#include "epochfs/sim/baselines.h"

#include <algorithm>
#include <unordered_map>
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
  BeladyPolicy(uint64_t budget, const Future& future) : budget_(budget), future_(future) {}
  const char* name() const override { return "belady"; }
  uint64_t budget() const override { return budget_; }
  uint64_t resident_bytes() const override { return used_; }

  Decision OnHit(const Access& a) override {
    Decision d;
    auto it = held_.find(a.object);
    if (it == held_.end()) return d;
    const uint64_t key = future_.NextUse(a.object);
    if (key == Future::kNever) {  // never read again: its space is better free
      Forget(it);
      d.evict.push_back(a.object);
      return d;
    }
    it->second.key = key;
    Push(a.object, it->second);
    return d;
  }

  Decision OnMiss(const Access& a, uint64_t) override {
    Decision d;
    if (auto it = held_.find(a.object); it != held_.end()) Forget(it);
    const uint64_t s = a.size;
    if (s == 0 || s > budget_) return d;
    const uint64_t key = future_.NextUse(a.object);
    if (key == Future::kNever) return d;
    const Rank mine = RankOf(key, s, a.now_ns);
    std::vector<ObjectId> victims;
    uint64_t used_after = used_ + s;
    bool bypass = false;
    while (used_after > budget_) {
      int cls = -1;
      Rank best{};
      for (size_t c = 0; c < heaps_.size(); ++c) {
        if (!CleanTop(c)) continue;
        const Item& top = heaps_[c].front();
        const Rank r = RankOf(top.key, held_.at(top.id).size, a.now_ns);
        if (cls < 0 || best < r) {
          cls = static_cast<int>(c);
          best = r;
        }
      }
      if (cls < 0 || !(mine < best)) {  // the new object is the one to drop
        bypass = true;
        break;
      }
      std::vector<Item>& h = heaps_[cls];
      std::pop_heap(h.begin(), h.end());
      const Item it = h.back();
      h.pop_back();
      popped_.push_back(it);
      victims.push_back(it.id);
      used_after -= held_.at(it.id).size;
    }
    if (bypass) {  // restore the tentatively popped tops
      for (const Item& it : popped_) {
        std::vector<Item>& h = heaps_[ClassOf(held_.at(it.id).size)];
        h.push_back(it);
        std::push_heap(h.begin(), h.end());
      }
      popped_.clear();
      return d;
    }
    popped_.clear();
    for (ObjectId v : victims) Forget(held_.find(v));
    d.evict = std::move(victims);
    Entry e;
    e.size = s;
    e.key = key;
    auto [pos, fresh] = held_.emplace(a.object, e);
    (void)fresh;
    used_ += s;
    ++live_[ClassOf(s)];
    Push(a.object, pos->second);
    d.admit = true;
    return d;
  }

  void OnDropped(ObjectId id) override {
    auto it = held_.find(id);
    if (it != held_.end()) Forget(it);
  }

  Status CheckInvariants() const override {
    uint64_t sum = 0;
    for (const auto& [id, e] : held_) sum += e.size;
    if (sum != used_) return Internal("belady: resident bytes disagree");
    if (used_ > budget_) return Internal("belady: over budget");
    return Status::Ok();
  }

 private:
  struct Entry {
    uint64_t size = 0;
    uint64_t key = 0;    // estimated time of next use
    uint64_t stamp = 0;  // of the live heap item
  };
  struct Item {
    uint64_t key;
    uint64_t stamp;
    ObjectId id;
    bool operator<(const Item& o) const { return key != o.key ? key < o.key : id < o.id; }
  };
  // Eviction rank: larger goes first. (time to next use) × size, then key.
  struct Rank {
    long double cost = 0;
    uint64_t key = 0;
    bool operator<(const Rank& o) const { return cost != o.cost ? cost < o.cost : key < o.key; }
  };
  static Rank RankOf(uint64_t key, uint64_t size, uint64_t now) {
    const uint64_t dist = key > now + 1000 ? key - now : 1000;
    return {static_cast<long double>(dist) * static_cast<long double>(size), key};
  }
  size_t ClassOf(uint64_t size) {
    const int msb = 63 - __builtin_clzll(size | 1);
    const uint64_t frac = msb >= 2 ? (size >> (msb - 2)) & 3 : 0;
    const size_t c = static_cast<size_t>(msb) * 4 + frac;
    if (c >= heaps_.size()) {
      heaps_.resize(c + 1);
      live_.resize(c + 1, 0);
    }
    return c;
  }
  void Push(ObjectId id, Entry& e) {
    e.stamp = ++stamp_;
    const size_t c = ClassOf(e.size);
    std::vector<Item>& h = heaps_[c];
    h.push_back({e.key, e.stamp, id});
    std::push_heap(h.begin(), h.end());
    if (h.size() > 2 * live_[c] + 64) Rebuild(c);
  }
  void Rebuild(size_t c) {
    std::vector<Item>& h = heaps_[c];
    h.erase(std::remove_if(h.begin(), h.end(), [&](const Item& it) { return Stale(it); }),
            h.end());
    std::make_heap(h.begin(), h.end());
  }
  bool Stale(const Item& it) const {
    auto e = held_.find(it.id);
    return e == held_.end() || e->second.stamp != it.stamp;
  }
  // Drops stale items from class c's top; false when it is empty.
  bool CleanTop(size_t c) {
    std::vector<Item>& h = heaps_[c];
    while (!h.empty() && Stale(h.front())) {
      std::pop_heap(h.begin(), h.end());
      h.pop_back();
    }
    return !h.empty();
  }
  void Forget(std::unordered_map<ObjectId, Entry>::iterator it) {
    used_ -= it->second.size;
    --live_[ClassOf(it->second.size)];
    held_.erase(it);
  }

  uint64_t budget_;
  const Future& future_;
  uint64_t used_ = 0;
  uint64_t stamp_ = 0;
  std::unordered_map<ObjectId, Entry> held_;
  std::vector<std::vector<Item>> heaps_;  // per size class, max-heap on key
  std::vector<uint64_t> live_;            // live items per class
  std::vector<Item> popped_;              // scratch of OnMiss
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
