// Introspection: the epoch policy's per-job snapshots, regions and batch
// counters, and the names and horizon shared with control/ (policy.h,
// epoch_policy.h).
#include "epoch_policy_state.h"

#include <algorithm>
#include <utility>

namespace epochfs::cache {

const char* RegionName(Region r) {
  switch (r) {
    case Region::kNone: return "none";
    case Region::kCur: return "cur";
    case Region::kNext: return "next";
    case Region::kTail: return "tail";
  }
  return "?";
}

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kWarmup: return "warmup";
    case JobState::kCaching: return "caching";
    case JobState::kLastEpoch: return "last_epoch";
    case JobState::kDone: return "done";
  }
  return "?";
}

uint64_t ExpectedRemainingNs(const JobSnapshot& s) {
  if (s.epochs == 0 || s.epoch_time_ns == 0 || s.state == JobState::kDone ||
      s.epoch >= s.epochs) {
    return 0;
  }
  const uint64_t left = s.epochs - s.epoch;
  if (s.epoch_time_ns > UINT64_MAX / left) return UINT64_MAX;
  return left * s.epoch_time_ns;
}

namespace epoch_impl {

std::vector<JobSnapshot> EpochPolicy::Jobs() const {
  std::vector<JobSnapshot> out;
  out.reserve(jobs_.size());
  const uint64_t share = DefaultShare();
  for (const auto& [id, jp] : jobs_) {
    const Job& j = *jp;
    JobSnapshot s;
    s.id = id;
    s.name = j.spec.name;
    s.state = j.state;
    s.started = j.started;
    s.epoch = j.epoch;
    s.epochs = j.spec.epochs;
    s.epoch_samples = j.samples.empty() ? 0 : j.CurLen();
    s.batch = j.consumed / j.spec.batch_size;
    s.current = j.cur_stats;
    s.previous = j.prev_stats;
    s.total = j.total_stats;
    s.cur_bytes = j.bytes[static_cast<int>(Region::kCur)];
    s.next_bytes = j.bytes[static_cast<int>(Region::kNext)];
    s.tail_bytes = j.bytes[static_cast<int>(Region::kTail)];
    s.granted_unused_bytes = j.free;
    s.default_alloc_bytes = j.state == JobState::kDone ? 0 : share;
    s.reserved_bytes = j.reserved;
    s.need_bytes = j.need;
    s.need_measured = j.measured;
    s.need_batches = j.need_batches;
    s.need_sample_bytes = j.need_sample_bytes;
    s.rank = j.rank;
    s.lambda = j.lambda;
    s.h = H(j, share);
    s.e = j.e;
    s.epoch_time_ns = j.epoch_time_ns;
    s.load_ns_per_sample = j.load_ns;
    s.compute_ns_per_batch = j.compute_ns;
    s.mean_sample_bytes = j.MeanSize();
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const JobSnapshot& a, const JobSnapshot& b) { return a.id < b.id; });
  return out;
}

Region EpochPolicy::Where(JobId id, uint32_t sample) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || sample >= it->second->where.size()) return Region::kNone;
  return static_cast<Region>(it->second->where[sample]);
}

std::vector<uint32_t> EpochPolicy::NextCounters(JobId id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return {};
  return it->second->counters;
}

}  // namespace epoch_impl
}  // namespace epochfs::cache
