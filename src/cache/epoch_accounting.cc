// EpochPolicy: the byte accounts: a sample held in a region or released, an
// object the store lost, the objects that leave at the end of an event, the
// budget shrink's order of release, and the debug build's per-event check.
#include "epoch_policy_state.h"

#include <algorithm>
#include <cassert>

namespace epochfs::cache::epoch_impl {

// Sample x (not held) enters region r with s bytes.
void EpochPolicy::Hold(Job& j, uint32_t x, Region r, uint64_t s) {
  const int ri = static_cast<int>(r);
  j.where[x] = static_cast<uint8_t>(r);
  j.slot[x] = static_cast<uint32_t>(j.lists[ri].size());
  j.lists[ri].push_back(x);
  j.bytes[ri] += s;
  j.held.emplace(j.samples[x].object, x);
}

// Removes sample x from its region; returns the bytes it was charged (the
// caller decides where they go). A `next` sample decrements its counter.
uint64_t EpochPolicy::Unhold(Job& j, uint32_t x) {
  const int r = j.where[x];
  assert(r != static_cast<int>(Region::kNone));
  std::vector<uint32_t>& list = j.lists[r];
  const uint32_t s = j.slot[x];
  const uint32_t last = list.back();
  list[s] = last;
  j.slot[last] = s;
  list.pop_back();
  j.where[x] = static_cast<uint8_t>(Region::kNone);
  if (r == static_cast<int>(Region::kNext) && j.next_order != nullptr) {
    uint32_t& c = j.counters[j.next_order->PosOf(x) / j.spec.batch_size];
    assert(c > 0);
    --c;
  }
  const ObjectId id = j.samples[x].object;
  j.held.erase(id);
  Obj& o = objects_.at(id);
  j.bytes[r] -= o.size;
  if (--o.refs == 0) pending_.push_back(id);
  return o.size;
}

void EpochPolicy::MoveRegion(Job& j, Region from, Region to) {
  const int f = static_cast<int>(from);
  const int t = static_cast<int>(to);
  assert(j.lists[t].empty());
  for (uint32_t x : j.lists[f]) j.where[x] = static_cast<uint8_t>(to);
  j.lists[t].swap(j.lists[f]);
  j.bytes[t] = j.bytes[f];
  j.bytes[f] = 0;
}

void EpochPolicy::ReleaseRegion(Job& j, Region r) {
  std::vector<uint32_t>& list = j.lists[static_cast<int>(r)];
  while (!list.empty()) pool_ += Unhold(j, list.back());
}

// Everything the job holds or was granted goes back to the pool.
void EpochPolicy::ReleaseAll(Job& j) {
  ReleaseRegion(j, Region::kCur);
  ReleaseRegion(j, Region::kNext);
  ReleaseRegion(j, Region::kTail);
  pool_ += j.free;
  j.free = 0;
  j.prev_order = nullptr;
  j.next_order = nullptr;
  j.counters.clear();
}

// The store lost `id`: every holder forgets it, its bytes go to the pool.
void EpochPolicy::DropObject(ObjectId id) {
  auto oit = objects_.find(id);
  if (oit == objects_.end()) return;
  if (oit->second.shared) Unshare(oit->second);
  for (auto& [jid, jp] : jobs_) {
    auto h = jp->held.find(id);
    if (h != jp->held.end()) pool_ += Unhold(*jp, h->second);
  }
  resident_ -= oit->second.size;
  objects_.erase(oit);
  pending_.erase(std::remove(pending_.begin(), pending_.end(), id), pending_.end());
}

// Shared objects reclaimed by grants, and objects whose last holder let go
// during this event, leave the store.
void EpochPolicy::Flush(Decision* d) {
  d->evict.insert(d->evict.end(), reclaimed_.begin(), reclaimed_.end());
  reclaimed_.clear();
  for (ObjectId id : pending_) {
    auto it = objects_.find(id);
    if (it == objects_.end() || it->second.refs != 0 || it->second.shared) continue;
    d->evict.push_back(id);
    resident_ -= it->second.size;
    objects_.erase(it);
  }
  pending_.clear();
}

// O(jobs) accounting check after every event in debug builds.
void EpochPolicy::DebugCheck() const {
#ifndef NDEBUG
  uint64_t sum = pool_ + shared_;
  for (const auto& [id, j] : jobs_) sum += j->Held() + j->free;
  assert(sum == params_.budget_bytes);
  assert(resident_ <= params_.budget_bytes);
#endif
}

// SetBudget's shrink: moves bytes into the pool until pool_ >= need (always
// possible: everything returned, the pool is the old budget).
void EpochPolicy::FreeForShrink(uint64_t need) {
  while (pool_ < need && !lru_.empty()) ReclaimOneShared();
  // Jobs in a fixed order: the sorted list (head first), then the others by id.
  std::vector<Job*> order(list_.begin(), list_.end());
  std::vector<Job*> rest;
  for (auto& [id, jp] : jobs_) {
    if (jp->rank < 0) rest.push_back(jp.get());
  }
  std::sort(rest.begin(), rest.end(),
            [](const Job* a, const Job* b) { return a->spec.id < b->spec.id; });
  order.insert(order.end(), rest.begin(), rest.end());
  for (Job* j : order) {
    const uint64_t take = std::min(j->free, need - std::min(need, pool_));
    j->free -= take;
    pool_ += take;
  }
  const int tl = static_cast<int>(Region::kTail);
  const int nx = static_cast<int>(Region::kNext);
  const int cu = static_cast<int>(Region::kCur);
  for (Job* j : order) {
    while (pool_ < need && !j->lists[tl].empty()) pool_ += Unhold(*j, j->lists[tl].back());
  }
  for (Job* j : order) {
    while (pool_ < need && !j->lists[nx].empty()) {
      const std::vector<uint32_t>& list = j->lists[nx];
      pool_ += Unhold(*j, list[Rand() % list.size()]);
    }
  }
  for (Job* j : order) {
    if (pool_ >= need) break;
    std::vector<uint32_t> victims = j->lists[cu];
    if (j->cur_order != nullptr) {  // read last in this epoch: evicted first
      const Order& o = *j->cur_order;
      std::sort(victims.begin(), victims.end(),
                [&o](uint32_t a, uint32_t b) { return o.PosOf(a) < o.PosOf(b); });
    }
    while (pool_ < need && !victims.empty()) {
      pool_ += Unhold(*j, victims.back());
      victims.pop_back();
    }
  }
}

}  // namespace epochfs::cache::epoch_impl
