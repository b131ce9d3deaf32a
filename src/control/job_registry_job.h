// JobRegistry::Job: the registry's record of one job, and the object → sample
// index it keeps for attribution. Private to the job_registry*.cc files:
//   job_registry.cc         registration, removal, orphans and re-attach,
//                           lookups and `status` snapshots
//   job_registry_writes.cc  the control files' writes (config, samples,
//                           order/K, epoch, position, pids)
//   job_registry_reads.cc   a dataset read: which job, sample, epoch, batch
// Ownership: JobRegistry owns every Job (jobs_); by_id_ points into them.
// Thread safety: every field is guarded by JobRegistry::mu_.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "epochfs/control/job_registry.h"

namespace epochfs::control {

// Object → sample index of one job's list: (object, sample) pairs sorted, so
// a list of millions is one allocation and one sort (built without the
// registry mutex). An object listed twice (two paths, one id) is its first
// sample. Immutable once built: safe to read from any thread.
class SampleIndex {
 public:
  SampleIndex() = default;
  explicit SampleIndex(const std::vector<cache::SampleRef>& refs) : sorted_(refs.size()) {
    for (size_t k = 0; k < refs.size(); ++k) sorted_[k] = {refs[k].object, static_cast<uint32_t>(k)};
    std::sort(sorted_.begin(), sorted_.end());
  }
  std::optional<uint32_t> Find(cache::ObjectId object) const {
    auto it = std::lower_bound(sorted_.begin(), sorted_.end(),
                               std::pair<cache::ObjectId, uint32_t>{object, 0});
    if (it == sorted_.end() || it->first != object) return std::nullopt;
    return it->second;
  }

 private:
  std::vector<std::pair<cache::ObjectId, uint32_t>> sorted_;
};

struct JobRegistry::Job {
  JobId id = kNoJob;
  std::optional<uint64_t> orphaned_since_ns;  // see ReapOrphans
  std::string name;
  uid_t owner = 0;
  // The owner's credentials as last seen (mkdir, their samples writes): the
  // samples are resolved and loaded as they reach LOWER.
  std::shared_ptr<const Credentials> owner_creds;
  JobPhase state = JobPhase::kRegistered;
  std::optional<JobConfig> config;
  // The sample list is kept as its fingerprint (identical rewrites are no-ops)
  // and as object → sample for attribution; the paths themselves live in the
  // daemon's store once resolved.
  size_t sample_count = 0;
  uint64_t samples_hash = 0;
  SampleIndex object_to_sample;
  std::unique_ptr<EpochTracker> tracker;  // set with the samples
  std::optional<PositionReport> position;  // the last accepted `position`
  uint64_t accesses = 0;
  std::string last_error;
  uint32_t reattached = 0;
  uint32_t fresh_starts = 0;
  // Re-attached and not confirmed yet: a different config or samples list
  // starts the job afresh (see the header).
  bool reattach_pending = false;
  // Re-attached and nothing read since: an `epoch` marker for the current
  // epoch restarts it.
  bool restart_on_marker = false;
};

}  // namespace epochfs::control
