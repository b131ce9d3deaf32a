// PolicyJobSink: where the control registry's accepted changes go. It resolves
// sample paths on the lower store as the job's owner reaches them (a sample
// in a directory the owner may not search is hidden: never loaded, and
// reported as a missing file is), drives the cache policy through the cache
// front (applying its Decisions), keeps each job's per-epoch hit/miss history,
// and answers the control tree's questions about the policy (PolicyView).
// RegistryAttributor: the fs layer's per-open question "which job?", answered
// by the registry (skipped while no job is registered).
// Thread safety: thread-safe. Lock order: registry → policy → history_mu_.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "epochfs/control/job_registry.h"
#include "epochfs/control/policy_view.h"
#include "epochfs/fs/fs_types.h"
#include "epochfs/store/cache_front.h"
#include "epochfs/store/lower.h"
#include "prefetcher.h"

namespace epochfs {

class PolicyJobSink final : public control::JobSink, public control::PolicyView {
 public:
  PolicyJobSink(const store::Lower& lower, store::CacheFront& cache)
      : lower_(lower), cache_(cache) {}

  Result<control::ResolvedSamples> ResolveSamples(const std::string& root,
                                                  const control::PathList& paths,
                                                  const Credentials& owner) override;
  Status OnConfigured(const cache::JobSpec& spec, const control::JobConfig& config) override;
  Status OnSamples(control::JobId job, std::vector<cache::SampleRef> samples,
                   std::shared_ptr<const control::SampleList> list) override;
  Status OnOrder(control::JobId job, uint32_t epoch, std::vector<uint32_t> order) override;
  void OnEpochBegin(control::JobId job, uint32_t epoch) override;
  void OnEpochRestart(control::JobId job) override;
  void OnPosition(control::JobId job, uint32_t epoch, uint64_t position) override;
  void OnJobEnd(control::JobId job) override;

  std::optional<control::JobFigures> Figures(cache::JobId id) const override;

  // The LOWER file of sample `sample` of job `job`, if the job has one: its
  // path, whether it is hidden from the job's owner, and their credentials.
  std::optional<SampleFile> SampleFileOf(cache::JobId job, uint32_t sample) const;
  // Called after a job's samples list is accepted (the prefetcher arms).
  // REQUIRES: set before the first samples write.
  void SetSamplesListener(std::function<void()> fn) { on_samples_ = std::move(fn); }
  // Sample `sample` of job `job`, at LOWER path `rel`, cannot be loaded
  // (`why`): counted in the job's figures (its `status`).
  void SampleUnreadable(cache::JobId job, uint32_t sample, const std::string& rel,
                        const Status& why);

 private:
  std::function<void()> on_samples_;
  const store::Lower& lower_;
  store::CacheFront& cache_;
  mutable std::mutex history_mu_;
  // Finished epochs' counters per job, oldest first.
  std::map<cache::JobId, std::vector<cache::EpochCounters>> history_;  // guarded by history_mu_
  struct Unreadable {
    uint64_t count = 0;
    std::string first;
  };
  std::map<cache::JobId, Unreadable> unreadable_;  // guarded by history_mu_
  mutable std::mutex lists_mu_;
  std::map<cache::JobId, std::shared_ptr<const control::SampleList>> lists_;  // guarded by lists_mu_
};

class RegistryAttributor final : public fs::Attributor {
 public:
  explicit RegistryAttributor(control::JobRegistry& registry) : registry_(registry) {}
  Attribution Attribute(pid_t pid, uid_t uid, cache::ObjectId object) override;

 private:
  control::JobRegistry& registry_;
};

}  // namespace epochfs
