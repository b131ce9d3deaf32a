// EpochPolicy: a job's life through its epochs: the start of an epoch (next
// becomes cur, cur the tail), batch boundaries, the end of warm-up and its
// measurements (T, t_s, compute, e_i, the reservation), the tail's release and
// the last epoch's end.
#include "epoch_policy_state.h"

#include <algorithm>

namespace epochfs::cache::epoch_impl {

void EpochPolicy::StartEpoch(Job& j, uint32_t epoch, uint64_t now) {
  if (j.started && epoch == j.epoch) return;
  if (!j.started) {
    j.started = true;
  } else {
    if (j.state == JobState::kWarmup) FinishWarmup(j, now, /*ended=*/true);
    ReleaseTail(j);
    // The unused part of cur becomes the tail; next becomes cur.
    MoveRegion(j, Region::kCur, Region::kTail);
    if (epoch == j.epoch + 1) {
      MoveRegion(j, Region::kNext, Region::kCur);
    } else {
      ReleaseRegion(j, Region::kNext);  // filled for an epoch that was skipped
    }
    // The tail's order is kept while the tail lives (for invariant checks).
    j.prev_order = j.lists[static_cast<int>(Region::kTail)].empty() ? nullptr : j.cur_order;
    j.tail_until = static_cast<uint64_t>(TailBatches(j)) * j.spec.batch_size;
    j.prev_stats = j.cur_stats;
  }
  j.epoch = epoch;
  j.cur_stats = EpochCounters{epoch};
  j.consumed = 0;
  j.epoch_start_ns = now;
  DropOldOrders(j);
  auto cur = j.orders.find(epoch);
  j.cur_order = cur == j.orders.end() ? nullptr : &cur->second;
  auto next = j.orders.find(epoch + 1);
  j.next_order = next == j.orders.end() ? nullptr : &next->second;
  ResetCounters(j);
  // Shared objects this epoch reads are resident at its start: they are
  // `cur` for it, adopted within the job's granted-but-unused quota (whose
  // bytes go back to the pool, as the hit will return the object's).
  if (j.state == JobState::kCaching && j.free > 0 && !lru_.empty()) {
    const uint64_t adopted = AdoptShared(j, j.cur_order, Region::kCur, j.free);
    j.free -= adopted;
    pool_ += adopted;
  }
  if (j.state == JobState::kCaching && j.LastEpoch()) {  // step 4
    j.state = JobState::kLastEpoch;
    pool_ += j.free;
    j.free = 0;
    LeaveList(j);
  }
  if (j.state == JobState::kLastEpoch) {
    j.next_order = nullptr;
    j.counters.clear();
  }
}

// Batch boundaries, warm-up end, tail release, last-epoch end.
void EpochPolicy::Progress(Job& j, uint64_t now) {
  const uint64_t len = j.CurLen();
  const uint64_t b = j.spec.batch_size;
  const bool batch_done = j.consumed % b == 0 || j.consumed >= len;
  if (!batch_done) return;
  if (j.state == JobState::kWarmup) {
    const bool whole = j.consumed >= len;
    if ((params_.warmup_batches == 0 && whole) ||
        (params_.warmup_batches > 0 &&
         (CeilDiv(j.consumed, b) >= params_.warmup_batches || whole))) {
      FinishWarmup(j, now, /*ended=*/false);
    }
  }
  if (!j.lists[static_cast<int>(Region::kTail)].empty() && j.consumed >= j.tail_until) {
    ReleaseTail(j);
  }
  if (j.state == JobState::kLastEpoch && j.consumed >= len) {
    ReleaseAll(j);
    j.state = JobState::kDone;
  }
}

// Step 1 ends: T, t_s, compute, e_i; join the sorted list; reserve (S31).
// `ended`: the warm-up epoch is over (the next one began), so its length is
// what was read; otherwise the epoch is either complete or, after
// warmup_batches batches, extrapolated to its full length.
void EpochPolicy::FinishWarmup(Job& j, uint64_t now, bool ended) {
  const uint64_t b = j.spec.batch_size;
  const uint64_t elapsed = now > j.epoch_start_ns ? now - j.epoch_start_ns : 0;
  uint64_t batches = CeilDiv(j.CurLen(), b);  // of a whole epoch
  uint64_t interval = 0;                      // between batch completions
  if (ended || j.consumed >= j.CurLen()) {
    if (ended) batches = std::max<uint64_t>(1, CeilDiv(j.consumed, b));
    j.epoch_time_ns = elapsed;
    interval = elapsed / batches;
  } else {
    const uint64_t done = std::max<uint64_t>(1, j.consumed / b);
    interval = elapsed / done;
    j.epoch_time_ns = static_cast<uint64_t>(static_cast<double>(elapsed) *
                                            static_cast<double>(batches) /
                                            static_cast<double>(done));
  }
  j.load_ns = j.warm_load_n == 0 ? 0 : j.warm_load_sum / j.warm_load_n;
  if (j.spec.compute_ns_per_batch != 0) {
    j.compute_ns = j.spec.compute_ns_per_batch;
  } else {
    // Interval between batch completions minus the wall time W loaders need
    // to load one batch: what is left is compute the loads could hide behind.
    const uint64_t load_wall = b * j.load_ns / j.spec.loaders;
    j.compute_ns = interval > load_wall ? interval - load_wall : 0;
  }
  if (j.load_ns == 0) {
    j.e = j.spec.batch_size;  // loads never measured: want everything
  } else {
    const uint64_t hidden = j.spec.loaders * j.compute_ns / j.load_ns;
    j.e = hidden >= b ? 0 : static_cast<uint32_t>(b - hidden);
  }
  j.need_sample_bytes = j.MeanSize();
  j.need = static_cast<uint64_t>(j.e) * batches * j.need_sample_bytes;
  j.need_batches = batches;
  j.measured = true;
  if (j.LastEpoch()) {
    j.state = JobState::kLastEpoch;
    return;
  }
  j.state = JobState::kCaching;
  j.reserved = std::min({DefaultShare(), j.need, pool_ + shared_});
  list_.push_back(&j);
  SortList();
  // Shared objects the job reads in its next epoch (typically its own warm-up
  // reads) are adopted into `next` within the reservation before the rest of
  // it is taken, so that taking it cannot evict them (docs/policy.md,
  // "Adoption at the end of warm-up").
  uint64_t adopted = 0;
  if (j.next_order != nullptr) {
    adopted = AdoptShared(j, j.next_order, Region::kNext, j.reserved);
  }
  TakeFromPool(j.reserved - adopted);
  j.free += j.reserved - adopted;
}

// Orders before the current epoch go, except the one the tail still needs.
void EpochPolicy::DropOldOrders(Job& j) {
  for (auto it = j.orders.begin(); it != j.orders.end();) {
    if (it->first >= j.epoch || (j.prev_order != nullptr && &it->second == j.prev_order)) {
      ++it;
    } else {
      it = j.orders.erase(it);
    }
  }
}

void EpochPolicy::ReleaseTail(Job& j) {
  ReleaseRegion(j, Region::kTail);
  j.prev_order = nullptr;
  DropOldOrders(j);
}

}  // namespace epochfs::cache::epoch_impl
