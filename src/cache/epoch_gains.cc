// EpochPolicy: the sorted list and its gains, and admission into `next`
// (S34–S37): the batch counters, grants from the pool by λ_i, and taking from
// the job before in the list when the pool is empty.
#include "epoch_policy_state.h"

#include <algorithm>

namespace epochfs::cache::epoch_impl {

// C_i: an equal share of the budget among the jobs still running.
uint64_t EpochPolicy::DefaultShare() const {
  uint64_t n = 0;
  for (const auto& [id, j] : jobs_) n += j->state != JobState::kDone ? 1 : 0;
  return n == 0 ? params_.budget_bytes : params_.budget_bytes / n;
}

// h_i = b_i·C_i/N_i with C_i in samples (bytes / mean sample size), ≤ b_i.
double EpochPolicy::H(const Job& j, uint64_t share) {
  const uint64_t mean = j.MeanSize();
  if (mean == 0 || j.samples.empty()) return 0.0;
  const double c_samples = static_cast<double>(share) / static_cast<double>(mean);
  const double h = static_cast<double>(j.spec.batch_size) * c_samples /
                   static_cast<double>(j.CurLen());
  return std::min(h, static_cast<double>(j.spec.batch_size));
}

// Jobs sorted by T ascending (ties by id); λ by rank (step 1).
void EpochPolicy::SortList() {
  std::sort(list_.begin(), list_.end(), [](const Job* a, const Job* b) {
    if (a->epoch_time_ns != b->epoch_time_ns) return a->epoch_time_ns < b->epoch_time_ns;
    return a->spec.id < b->spec.id;
  });
  const double tmin = list_.empty() ? 0 : static_cast<double>(list_.front()->epoch_time_ns);
  const double tmax = list_.empty() ? 0 : static_cast<double>(list_.back()->epoch_time_ns);
  for (size_t i = 0; i < list_.size(); ++i) {
    Job& j = *list_[i];
    j.rank = static_cast<int32_t>(i);
    j.lambda = tmax > tmin ? params_.gain_max * (tmax - static_cast<double>(j.epoch_time_ns)) /
                                 (tmax - tmin)
                           : 1.0;
  }
}

void EpochPolicy::LeaveList(Job& j) {
  auto it = std::find(list_.begin(), list_.end(), &j);
  if (it == list_.end()) return;
  list_.erase(it);
  j.rank = -1;
  j.lambda = 0.0;
  SortList();
}

// S34–S37 for sample x of job j, read now.
void EpochPolicy::TryAdmit(Job& j, uint32_t x, const Access& a, bool hit, Decision* d) {
  if (j.next_order == nullptr || j.where[x] != static_cast<uint8_t>(Region::kNone)) return;
  const int32_t pos = j.next_order->PosOf(x);  // S34
  if (pos == kAbsent) return;
  const ObjectId id = j.samples[x].object;
  if (j.held.count(id) != 0) return;  // another sample of this job is the same file
  auto oit = objects_.find(id);
  const bool resident = oit != objects_.end();
  if (!resident && hit) return;  // the store has it but we never admitted it: leave it
  const uint64_t s = resident ? oit->second.size : a.size;
  uint32_t& c = j.counters[pos / j.spec.batch_size];
  if (c >= j.e) return;  // S35/S36: the batch has its e_i samples
  // A shared object is adopted: its bytes go back to the pool, from which
  // the job is charged like any admission (so the grant cannot evict it).
  const bool adopt = resident && oit->second.shared;
  if (adopt) Unshare(oit->second);
  if (j.free < s) {
    // The pool as the jobs see it: the truly free bytes plus the shared
    // region, which every grant reclaims (LRU first) as needed.
    const uint64_t avail = pool_ + shared_;
    if (j.free + avail >= s) {  // S35: ask the pool, granted by gain
      const uint64_t ask = s - j.free;
      uint64_t grant = std::max<uint64_t>(
          ask, static_cast<uint64_t>(j.lambda * static_cast<double>(ask)));
      grant = std::min(grant, avail);
      TakeFromPool(grant);
      j.free += grant;
    } else if (!TakeFromPrevious(j, s - j.free)) {  // S37
      if (adopt) Reshare(id, oit->second);  // nothing changed: pool_ >= s
      return;
    }
  }
  // The sample enters `next`.
  j.free -= s;
  Hold(j, x, Region::kNext, s);
  ++c;
  if (!resident) {
    objects_.emplace(id, Obj{s, 1});
    resident_ += s;
    d->admit = !hit;
  } else {
    ++oit->second.refs;
  }
}

// S37: the job before j in the sorted list hands over `need` bytes: its free
// quota first, then random samples of its `next`. All or nothing.
bool EpochPolicy::TakeFromPrevious(Job& j, uint64_t need) {
  if (j.rank <= 0) return false;  // first in the list: takes from no one
  Job& p = *list_[j.rank - 1];
  const int nx = static_cast<int>(Region::kNext);
  if (p.free + p.bytes[nx] < need) return false;
  const uint64_t from_free = std::min(p.free, need);
  p.free -= from_free;
  j.free += from_free;
  need -= from_free;
  while (need > 0) {
    const std::vector<uint32_t>& list = p.lists[nx];
    const uint32_t victim = list[Rand() % list.size()];
    const uint64_t got = Unhold(p, victim);  // decrements its batch counter
    j.free += got;
    need = got >= need ? 0 : need - got;
  }
  return true;
}

}  // namespace epochfs::cache::epoch_impl
