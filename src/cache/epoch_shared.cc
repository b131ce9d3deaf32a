// EpochPolicy: the shared region (params.share_idle): unclaimed misses cached
// LRU in the idle pool, reclaimed by every grant, and adopted by a job that is
// about to read them (end of warm-up, start of an epoch, a narrowed `cur`).
#include "epoch_policy_state.h"

#include <algorithm>
#include <cassert>

namespace epochfs::cache::epoch_impl {

// An unclaimed miss enters the shared region (most recently used) when it
// fits in the idle bytes (pool + shared), evicting least recently used
// shared objects as needed. Empty files are not worth an entry.
void EpochPolicy::AdmitShared(const Access& a, uint64_t load_ns, Decision* d) {
  if (a.size == 0 || a.size > pool_ + shared_ || objects_.count(a.object) != 0) return;
  TakeFromPool(a.size);
  shared_ += a.size;
  Obj o;
  o.size = a.size;
  o.shared = true;
  o.load_ns = load_ns;
  o.lru = lru_.insert(lru_.end(), a.object);
  objects_.emplace(a.object, o);
  resident_ += a.size;
  d->admit = true;
}

// Takes `n` bytes out of the pool for a job, evicting shared objects (least
// recently used first) while the truly free bytes do not cover it. The
// caller has checked n <= pool_ + shared_.
void EpochPolicy::TakeFromPool(uint64_t n) {
  assert(n <= pool_ + shared_);
  while (pool_ < n) ReclaimOneShared();
  pool_ -= n;
}

// The least recently used shared object leaves; its bytes go to the pool.
void EpochPolicy::ReclaimOneShared() {
  const ObjectId id = lru_.front();
  auto it = objects_.find(id);
  assert(it != objects_.end() && it->second.shared);
  const uint64_t size = it->second.size;
  lru_.pop_front();
  shared_ -= size;
  pool_ += size;
  resident_ -= size;
  objects_.erase(it);
  reclaimed_.push_back(id);
}

// A shared object leaves (or re-enters, at the most recent end) the shared
// region, its bytes going to (coming from) the truly free pool.
void EpochPolicy::Unshare(Obj& o) {
  lru_.erase(o.lru);
  o.shared = false;
  shared_ -= o.size;
  pool_ += o.size;
}

void EpochPolicy::Reshare(ObjectId id, Obj& o) {
  pool_ -= o.size;
  shared_ += o.size;
  o.shared = true;
  o.lru = lru_.insert(lru_.end(), id);
}

// Moves shared objects of the samples of `order` (nullptr: every sample), in
// order, into region r of job j, each charged to the job, while their sizes
// fit in `limit` bytes; `next` respects the batch counters (S36). The bytes
// go from the shared region straight to the job: the pool does not change.
// Returns the bytes adopted. Nothing happens without shared objects, so a
// policy with share_idle = false decides exactly as before.
uint64_t EpochPolicy::AdoptShared(Job& j, const Order* order, Region r, uint64_t limit) {
  uint64_t used = 0;
  const uint64_t len = order != nullptr ? order->size() : j.N();
  for (uint64_t p = 0; p < len && !lru_.empty() && used < limit; ++p) {
    const uint32_t x = order != nullptr ? order->idx[p] : static_cast<uint32_t>(p);
    if (j.where[x] != static_cast<uint8_t>(Region::kNone)) continue;
    const ObjectId id = j.samples[x].object;
    auto oit = objects_.find(id);
    if (oit == objects_.end() || !oit->second.shared || j.held.count(id) != 0) continue;
    Obj& o = oit->second;
    if (o.size > limit - used) continue;
    if (r == Region::kNext) {
      uint32_t& c = j.counters[p / j.spec.batch_size];
      if (c >= j.e) continue;
      ++c;
    }
    Unshare(o);
    pool_ -= o.size;
    ++o.refs;
    Hold(j, x, r, o.size);
    used += o.size;
  }
  return used;
}

// The current epoch ran without an order (every sample) and now has one:
// what `cur` holds outside it goes back to the shared region (an implicit
// `cur` fills only by adopting shared objects), and only reads of samples
// in the order count as consumed, so the epoch neither keeps samples it will
// not read nor ends before its order is read. O(N + cur).
void EpochPolicy::NarrowCur(Job& j) {
  std::vector<uint32_t> out;
  for (uint32_t x : j.lists[static_cast<int>(Region::kCur)]) {
    if (!j.InCur(x)) out.push_back(x);
  }
  for (uint32_t x : out) {
    const ObjectId id = j.samples[x].object;
    pool_ += Unhold(j, x);
    Obj& o = objects_.at(id);
    if (o.refs == 0 && params_.share_idle) {
      pending_.erase(std::remove(pending_.begin(), pending_.end(), id), pending_.end());
      Reshare(id, o);
    }
  }
  j.consumed = 0;
  for (uint32_t x : j.cur_order->idx) j.consumed += j.seen[x] == j.epoch + 1 ? 1 : 0;
}

}  // namespace epochfs::cache::epoch_impl
