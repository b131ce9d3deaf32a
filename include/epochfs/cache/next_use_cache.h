// NextUseCache: keeps the objects whose next use comes soonest, size-aware.
//
// The eviction core shared by the simulator's Belady bound (with the oracle's
// Future) and the daemon's "future" policy (with the jobs' declared future).
// On a miss it admits the object and evicts the held objects that save the
// least store time per byte held until the budget holds — or bypasses the
// object when it would itself be the first to go. A miss of s bytes costs the
// store s + r (r = `request_bytes`: what one request costs beyond its bytes,
// in bytes of transfer); holding the object costs s × (time to its next use).
// So the first to go is the largest (time to next use) × s / (s + r): with
// r = 0 (a store whose bandwidth binds) the furthest next use whatever its
// size, with large r (a store whose requests bind) the byte-time heuristic
// (time × size). A hit is worth what it saves the job that reads it
// (Future::Line::worth): a job whose loaders mostly wait on compute gains
// little from one, and its objects rank as if read later by that factor.
// For equal sizes and one job this is Belady's MIN; with sizes
// the exact problem is NP-hard. Objects are grouped by the job that reads them
// next and by size class (4 per power of two); within a group the furthest
// position goes first, and the groups' candidates are compared on that rank,
// with the time from Future::LineOf. An access costs O(groups + log n).
//
// Contract: resident bytes <= budget after every call; a Decision never
// evicts an object it does not hold nor admits one it holds.
// Thread safety: not thread-safe; `future` must outlive the cache.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "epochfs/cache/future.h"
#include "epochfs/cache/policy.h"

namespace epochfs::cache {

class NextUseCache {
 public:
  NextUseCache(uint64_t budget, const Future& future, uint64_t request_bytes = 0)
      : budget_(budget), request_bytes_(request_bytes), future_(future) {}

  uint64_t budget() const { return budget_; }
  // The cost of a request beyond its bytes (see above) from now on. Ranks
  // are computed when compared, so nothing needs filing again.
  void set_request_bytes(uint64_t bytes) { request_bytes_ = bytes; }
  uint64_t request_bytes() const { return request_bytes_; }
  uint64_t used() const { return used_; }
  bool Holds(ObjectId id) const;

  // `a.object` was read from the store: it moves to its next use (or, with
  // none, leaves: its space is better free).
  Decision OnHit(const Access& a);
  // `a.object` was loaded: admitted unless it is the least worth keeping.
  Decision OnMiss(const Access& a);
  // `a.object` was loaded ahead of its read (a prefetch): admitted as OnMiss
  // would, and only if it does no harm: every object it displaces is next
  // read, at its declared place (Future::DeclaredUse), after `a.object` is
  // (Belady's rule for a miss, applied to a load nobody waits for: a
  // prefetch that displaced a sooner read would cost a load more than it
  // saves). Otherwise bypassed: nothing is evicted.
  // `may_displace` false: admitted only into free space.
  Decision OnPrefetched(const Access& a, bool may_displace = true);
  // Of `soonest_first` (objects not held), up to `max` that OnPrefetched
  // would admit once `loading` (objects being loaded ahead now) and the
  // hints before them have landed, in order: each is played as OnPrefetched
  // would play it, the victims it would take no longer there for the next
  // one (an estimate: time moves and demand misses come between, and
  // OnPrefetched decides). Stops at the first hint that would be bypassed
  // or would displace a read that comes before its own. A hint of size 0
  // (unknown) is weighed as one byte. `may_displace(h)` false: `h` may take
  // only free space (null: every hint may displace).
  std::vector<PrefetchHint> Admissible(
      const std::vector<PrefetchHint>& loading, const std::vector<PrefetchHint>& soonest_first,
      size_t max, uint64_t now,
      const std::function<bool(const PrefetchHint&)>& may_displace = nullptr);
  // The store lost `id`: forgotten.
  void OnDropped(ObjectId id);
  // The future of `id` changed (a job declared an order, ended): it is filed
  // again under its new next use; with none it is evicted into `d`.
  void Rekey(ObjectId id, uint64_t now, Decision* d);
  // Sets the budget; evicts, least worth keeping first, until it holds.
  Decision SetBudget(uint64_t bytes, uint64_t now);
  // Bytes held per job index of the Future (the job that reads them next).
  std::vector<uint64_t> BytesByJob() const;
  Status CheckInvariants() const;

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
    uint64_t bytes = 0;
  };
  // Eviction rank: larger goes first. (time to next use) × size / (size +
  // request_bytes_) / worth (Future::Line: what a hit of the reading job
  // saves), then time.
  struct Rank {
    double cost = 0;
    uint64_t when = 0;
    bool valid = false;
    bool operator<(const Rank& o) const { return cost != o.cost ? cost < o.cost : when < o.when; }
  };
  Rank RankOf(uint64_t when, uint64_t size, uint64_t now, double worth) const;
  Decision Admit(const Access& a, bool prefetch, bool may_displace);
  // When `id` is next read at its declared place (Lines() current).
  uint64_t DeclaredWhen(ObjectId id) const;
  Entry& At(ObjectId id);
  void Lines(uint64_t now);
  void TopRank(size_t g, uint64_t now);
  size_t Worst() const;
  size_t GroupOf(uint32_t job, uint64_t size);
  void Keep(ObjectId id, Entry& e, const Future::Use& use);
  bool Stale(const Item& it) const;
  bool CleanTop(size_t g);
  void Forget(Entry& e);

  uint64_t budget_;
  uint64_t request_bytes_;
  const Future& future_;
  uint64_t used_ = 0;
  uint64_t stamp_ = 0;
  std::vector<Entry> held_;  // by Future::Slot
  std::vector<Group> groups_;
  std::vector<size_t> group_index_;              // job·256 + size class → index in groups_
  std::vector<std::pair<size_t, Item>> popped_;  // scratch of OnMiss
  std::vector<Future::Line> lines_;              // scratch: per job
  std::vector<Rank> ranks_;                      // scratch: per group
};

}  // namespace epochfs::cache
