// EpochPolicy: the Policy calls (events in, decisions out): job declarations,
// accesses, drops and budget changes; each ends by flushing what left the
// store into its Decision. epoch_policy_state.h states the accounting.
#include "epoch_policy_state.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace epochfs::cache::epoch_impl {
namespace {

// What the declaration rules need to know of the job.
declarations::JobView View(const Job& j) {
  return {j.samples.size(), j.spec.epochs, j.started ? std::optional(j.epoch) : std::nullopt};
}

}  // namespace

void EpochPolicy::OnDropped(ObjectId id) {
  DropObject(id);
  DebugCheck();
}

Status EpochPolicy::AddJob(const JobSpec& spec) {
  if (Status s = declarations::CheckNewJob(spec.id, spec.batch_size, jobs_.count(spec.id) != 0);
      !s.ok()) {
    return s;
  }
  auto job = std::make_unique<Job>();
  job->spec = spec;
  if (job->spec.loaders == 0) job->spec.loaders = 1;
  jobs_.emplace(spec.id, std::move(job));
  return Status::Ok();
}

Status EpochPolicy::SetSamples(JobId id, std::vector<SampleRef> samples) {
  Job* j = FindJob(id);
  if (j == nullptr) return NotFound("no job " + std::to_string(id));
  if (Status s = declarations::CheckSamples(samples.size(), !j->orders.empty() || j->started);
      !s.ok()) {
    return s;
  }
  j->known_size_sum = 0;
  j->known_size_n = 0;
  for (const SampleRef& s : samples) {
    if (s.size > 0) {
      j->known_size_sum += s.size;
      ++j->known_size_n;
    }
  }
  j->samples = std::move(samples);
  const size_t n = j->samples.size();
  j->where.assign(n, static_cast<uint8_t>(Region::kNone));
  j->slot.assign(n, 0);
  j->seen.assign(n, 0);
  return Status::Ok();
}

Status EpochPolicy::SetOrder(JobId id, uint32_t epoch, std::vector<uint32_t> order) {
  Job* j = FindJob(id);
  if (j == nullptr) return NotFound("no job " + std::to_string(id));
  const bool replaces = j->orders.count(epoch) != 0;
  Result<bool> stored = j->orders.Declare(View(*j), epoch, std::move(order));
  if (!stored.ok()) return stored.status();
  // Unchanged, or a future order replaced (orders in use are not: cur/next/prev
  // do not refer to it).
  if (!stored.value() || replaces) return Status::Ok();
  const Order* declared = j->orders.Get(epoch);
  if (j->started) {
    if (epoch == j->epoch) {
      j->cur_order = declared;  // was implicit until now
      NarrowCur(*j);
    } else if (epoch == j->epoch + 1) {
      j->next_order = declared;
      ResetCounters(*j);
    }
  }
  DebugCheck();
  return Status::Ok();
}

Result<Decision> EpochPolicy::BeginEpoch(JobId id, uint32_t epoch, uint64_t now_ns) {
  Job* j = FindJob(id);
  if (j == nullptr) return NotFound("no job " + std::to_string(id));
  if (Status s = declarations::CheckEpochBegins(View(*j), epoch); !s.ok()) return s;
  Decision d;
  StartEpoch(*j, epoch, now_ns);
  Flush(&d);
  DebugCheck();
  return d;
}

Status EpochPolicy::RestartEpoch(JobId id, uint64_t now_ns) {
  Job* j = FindJob(id);
  if (j == nullptr) return NotFound("no job " + std::to_string(id));
  if (!j->started) return Status::Ok();
  const uint32_t mark = j->epoch + 1;
  for (uint32_t& s : j->seen) {
    if (s == mark) s = 0;
  }
  j->consumed = 0;
  // The warm-up's clock restarts too: the time the job was dead is not
  // epoch time. Its load measurements stay (they measure lower storage).
  j->epoch_start_ns = now_ns;
  DebugCheck();
  return Status::Ok();
}

Result<Decision> EpochPolicy::EndJob(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return NotFound("no job " + std::to_string(id));
  Job& j = *it->second;
  ReleaseAll(j);
  LeaveList(j);
  jobs_.erase(it);
  Decision d;
  Flush(&d);
  DebugCheck();
  return d;
}

// Growing adds to the pool. Shrinking frees `old − bytes` in this order,
// least valuable first (docs/policy.md, "Budget changes"): the truly free
// pool; the shared region (LRU first); quota granted but not filled; the
// tails (late reads only); `next` regions, jobs in the order S37 takes
// space (head of the sorted list first), random victims as in S37; `cur`
// regions, the sample read last in the current order first.
Result<Decision> EpochPolicy::SetBudget(uint64_t bytes) {
  Decision d;
  const uint64_t old = params_.budget_bytes;
  if (bytes >= old) {
    pool_ += bytes - old;
    params_.budget_bytes = bytes;
    DebugCheck();
    return d;
  }
  const uint64_t need = old - bytes;
  FreeForShrink(need);
  assert(pool_ >= need);
  pool_ -= need;
  params_.budget_bytes = bytes;
  Flush(&d);
  DebugCheck();
  return d;
}

// The sample an access refers to, or -1: the index must match the sample
// list; otherwise the object is looked up among the job's holdings.
int64_t EpochPolicy::ResolveSample(const Job& j, const Access& a) {
  if (a.sample >= 0 && static_cast<uint64_t>(a.sample) < j.N() &&
      j.samples[a.sample].object == a.object) {
    return a.sample;
  }
  auto it = j.held.find(a.object);
  // (int64_t on both arms: `-1 : uint32_t` would be 2^32 - 1.)
  return it == j.held.end() ? int64_t{-1} : int64_t{it->second};
}

Decision EpochPolicy::OnAccess(const Access& a, bool hit, uint64_t load_ns) {
  Decision d;
  // A miss on an object we hold means the store lost it without telling.
  if (!hit && objects_.count(a.object) != 0) DropObject(a.object);
  // A hit on a shared object makes it the most recently used (before any
  // grant of this event reclaims shared space).
  if (hit) {
    auto it = objects_.find(a.object);
    if (it != objects_.end() && it->second.shared) {
      lru_.splice(lru_.end(), lru_, it->second.lru);
    }
  }
  // A block of a file read in blocks (Access::file) is no sample of the
  // job's: the epoch policy sees it as an unattributed read, as a file
  // streamed past the cache was before blocks.
  Job* jp = a.file != 0 ? nullptr : FindJob(a.job);
  bool claimed = false;
  if (jp != nullptr && !jp->samples.empty()) claimed = Serve(*jp, a, hit, load_ns, &d);
  if (!claimed && !hit && params_.share_idle) AdmitShared(a, load_ns, &d);
  Flush(&d);
  DebugCheck();
  return d;
}

// Counted by Serve only for a job's own read (not a block's) while it is
// not done: the same reads are moved.
void EpochPolicy::OnRefilled(const Access& a) {
  Job* j = a.file != 0 ? nullptr : FindJob(a.job);
  if (j == nullptr || j->samples.empty() || !j->started || j->state == JobState::kDone) return;
  CountRefillOfHit(a, &j->cur_stats);
  CountRefillOfHit(a, &j->total_stats);
}

// Returns whether the job claims the read (then only the job's rules apply):
// it is caching or in its last epoch and the object is one of its samples.
bool EpochPolicy::Serve(Job& j, const Access& a, bool hit, uint64_t load_ns, Decision* d) {
  if (!j.started) {  // no marker yet: the first declared epoch (or 0) begins now
    StartEpoch(j, j.orders.empty() ? 0 : j.orders.begin()->first, a.now_ns);
  }
  if (j.state == JobState::kDone) return false;
  if (hit) {
    CountHit(a, &j.cur_stats);
    CountHit(a, &j.total_stats);
  } else {
    ++j.cur_stats.misses;
    ++j.total_stats.misses;
  }
  j.cur_stats.lower_wait_ns += a.wait_ns;
  j.total_stats.lower_wait_ns += a.wait_ns;
  if (a.size > 0) {
    j.access_size_sum += a.size;
    ++j.access_size_n;
  }
  const int64_t xs = ResolveSample(j, a);
  if (xs < 0) return false;
  const uint32_t x = static_cast<uint32_t>(xs);
  const bool claimed = j.state != JobState::kWarmup;
  if (j.state == JobState::kWarmup) {
    if (!hit) {
      j.warm_load_sum += load_ns;
      ++j.warm_load_n;
    } else {
      // Served from the shared region: what loading it cost when it was
      // loaded still measures the lower storage (t_s is not biased by it).
      auto it = objects_.find(a.object);
      if (it != objects_.end() && it->second.shared) {
        j.warm_load_sum += it->second.load_ns;
        ++j.warm_load_n;
      }
    }
  }

  const Region r = static_cast<Region>(j.where[x]);
  if (r == Region::kCur || r == Region::kTail) {  // S33: a hit in cur frees its bytes
    pool_ += Unhold(j, x);
  }
  // A hit in the tail is a late read of the previous epoch (loaders read
  // ahead and out of order): it neither counts nor admits for this epoch.
  if (r == Region::kTail) return claimed;
  if (j.InCur(x) && j.seen[x] != j.epoch + 1) {
    j.seen[x] = j.epoch + 1;
    ++j.consumed;
    // Admission first (S34–S37), then the progress that may end warm-up,
    // release the tail or finish the last epoch.
    if (j.state == JobState::kCaching) TryAdmit(j, x, a, hit, d);
    Progress(j, a.now_ns);
    return claimed;
  }
  // A re-read, or a sample outside the current order (an early read of the
  // next epoch): it may still enter `next`.
  if (j.state == JobState::kCaching) TryAdmit(j, x, a, hit, d);
  return claimed;
}

}  // namespace epochfs::cache::epoch_impl

namespace epochfs::cache {

std::unique_ptr<Policy> MakeEpochPolicy(const EpochPolicyParams& params) {
  return std::make_unique<epoch_impl::EpochPolicy>(params);
}

}  // namespace epochfs::cache
