#include "epochfs/sim/baselines.h"

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
  BeladyPolicy(uint64_t budget, const Future& future)
      : budget_(budget), future_(future), held_(future.Slots()) {}
  const char* name() const override { return "belady"; }
  uint64_t budget() const override { return budget_; }
  uint64_t resident_bytes() const override { return used_; }

  Decision OnHit(const Access& a) override {
    Decision d;
    Entry& e = held_[future_.Slot(a.object)];
    if (e.size == 0) return d;
    Future::Use use;
    if (!future_.NextUse(a.object, &use)) {  // never read again: its space is better free
      Forget(e);
      d.evict.push_back(a.object);
      return d;
    }
    Keep(a.object, e, use);
    return d;
  }

  Decision OnMiss(const Access& a, uint64_t) override {
    Decision d;
    Entry& e = held_[future_.Slot(a.object)];
    if (e.size != 0) Forget(e);  // the store lost it
    const uint64_t s = a.size;
    Future::Use use;
    if (s == 0 || s > budget_ || !future_.NextUse(a.object, &use)) return d;
    lines_.resize(future_.Jobs());
    for (uint32_t j = 0; j < lines_.size(); ++j) lines_[j] = future_.LineOf(j, a.now_ns);
    const Rank mine = RankOf(lines_[use.job].At(use.pos), s, a.now_ns);
    std::vector<ObjectId> victims;
    uint64_t used_after = used_ + s;
    bool bypass = false;
    ranks_.assign(groups_.size(), Rank{});
    for (size_t g = 0; g < groups_.size(); ++g) TopRank(g, a.now_ns);
    while (used_after > budget_) {
      size_t group = kNone;
      for (size_t g = 0; g < groups_.size(); ++g) {
        if (ranks_[g].valid && (group == kNone || ranks_[group] < ranks_[g])) group = g;
      }
      if (group == kNone || !(mine < ranks_[group])) {  // the new object is the one to drop
        bypass = true;
        break;
      }
      std::vector<Item>& h = groups_[group].heap;
      std::pop_heap(h.begin(), h.end());
      popped_.push_back({group, h.back()});
      h.pop_back();
      victims.push_back(popped_.back().second.id);
      used_after -= held_[future_.Slot(victims.back())].size;
      TopRank(group, a.now_ns);
    }
    if (bypass) {  // restore the tentatively popped tops
      for (const auto& [g, it] : popped_) {
        groups_[g].heap.push_back(it);
        std::push_heap(groups_[g].heap.begin(), groups_[g].heap.end());
      }
      popped_.clear();
      return d;
    }
    popped_.clear();
    for (ObjectId v : victims) Forget(held_[future_.Slot(v)]);
    d.evict = std::move(victims);
    e.size = s;
    used_ += s;
    Keep(a.object, e, use);
    d.admit = true;
    return d;
  }

  void OnDropped(ObjectId id) override {
    Entry& e = held_[future_.Slot(id)];
    if (e.size != 0) Forget(e);
  }

  Status CheckInvariants() const override {
    uint64_t sum = 0;
    for (const Entry& e : held_) sum += e.size;
    if (sum != used_) return Internal("belady: resident bytes disagree");
    if (used_ > budget_) return Internal("belady: over budget");
    return Status::Ok();
  }

 private:
  static constexpr size_t kNone = ~size_t{0};
  struct Entry {
    uint64_t size = 0;   // 0: not held
    uint64_t stamp = 0;  // of the live heap item
    size_t group = 0;
  };
  struct Item {
    uint64_t pos;
    uint64_t stamp;
    ObjectId id;
    bool operator<(const Item& o) const { return pos != o.pos ? pos < o.pos : id < o.id; }
  };
  // Objects read next by one job, of one size class: max-heap on position.
  struct Group {
    uint32_t job = 0;
    std::vector<Item> heap;  // lazily deleted: stale items are skipped
    uint64_t live = 0;
  };
  // Eviction rank: larger goes first. (time to next use) × size, then time.
  struct Rank {
    double cost = 0;
    uint64_t when = 0;
    bool valid = false;
    bool operator<(const Rank& o) const { return cost != o.cost ? cost < o.cost : when < o.when; }
  };
  static Rank RankOf(uint64_t when, uint64_t size, uint64_t now) {
    const uint64_t dist = std::max<uint64_t>(when - now, 1000);
    return {double(dist) * double(size), when, true};
  }
  // ranks_[g] = the rank of group g's top (invalid when the group is empty).
  void TopRank(size_t g, uint64_t now) {
    if (!CleanTop(g)) {
      ranks_[g] = Rank{};
      return;
    }
    const Item& top = groups_[g].heap.front();
    ranks_[g] = RankOf(lines_[groups_[g].job].At(top.pos), held_[future_.Slot(top.id)].size, now);
  }
  size_t GroupOf(uint32_t job, uint64_t size) {
    const int msb = 63 - __builtin_clzll(size | 1);
    const uint64_t frac = msb >= 2 ? (size >> (msb - 2)) & 3 : 0;
    const size_t key = size_t{job} * 256 + static_cast<size_t>(msb) * 4 + frac;
    if (key >= group_index_.size()) group_index_.resize(key + 1, kNone);
    if (group_index_[key] == kNone) {
      group_index_[key] = groups_.size();
      groups_.push_back(Group{job, {}, 0});
    }
    return group_index_[key];
  }
  // Holds `e` (already counted in used_) with next use `use`.
  void Keep(ObjectId id, Entry& e, const Future::Use& use) {
    if (e.stamp != 0) --groups_[e.group].live;
    e.stamp = ++stamp_;
    e.group = GroupOf(use.job, e.size);
    Group& g = groups_[e.group];
    ++g.live;
    g.heap.push_back({use.pos, e.stamp, id});
    std::push_heap(g.heap.begin(), g.heap.end());
    if (g.heap.size() > 2 * g.live + 64) {
      g.heap.erase(
          std::remove_if(g.heap.begin(), g.heap.end(), [&](const Item& it) { return Stale(it); }),
          g.heap.end());
      std::make_heap(g.heap.begin(), g.heap.end());
    }
  }
  bool Stale(const Item& it) const {
    const Entry& e = held_[future_.Slot(it.id)];
    return e.size == 0 || e.stamp != it.stamp;
  }
  // Drops stale items from group g's top; false when it is empty.
  bool CleanTop(size_t g) {
    std::vector<Item>& h = groups_[g].heap;
    while (!h.empty() && Stale(h.front())) {
      std::pop_heap(h.begin(), h.end());
      h.pop_back();
    }
    return !h.empty();
  }
  void Forget(Entry& e) {
    used_ -= e.size;
    --groups_[e.group].live;
    e = Entry{};
  }

  uint64_t budget_;
  const Future& future_;
  uint64_t used_ = 0;
  uint64_t stamp_ = 0;
  std::vector<Entry> held_;  // by Future::Slot
  std::vector<Group> groups_;
  std::vector<size_t> group_index_;              // job·256 + size class → index in groups_
  std::vector<std::pair<size_t, Item>> popped_;  // scratch of OnMiss
  std::vector<Future::Line> lines_;              // scratch of OnMiss: per job
  std::vector<Rank> ranks_;                      // scratch of OnMiss: per group
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
