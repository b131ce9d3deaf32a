// PolicyJobSink: where the control registry's accepted changes go. It resolves
// sample paths on the lower store, drives the cache policy through the cache
// front (applying its Decisions), keeps each job's per-epoch hit/miss history,
// and answers the control tree's questions about the policy (PolicyView).
// RegistryAttributor: the fs layer's per-open question "which job?", answered
// by the registry (skipped while no job is registered).
// Thread safety: thread-safe. Lock order: registry → policy → history_mu_.
#pragma once

#include <functional>
#include <map>
#include <mutex>

#include "epochfs/control/job_registry.h"
#include "epochfs/control/policy_view.h"
#include "epochfs/fs/filesystem.h"
#include "epochfs/store/cache_front.h"
#include "epochfs/store/lower.h"

namespace epochfs {

class PolicyJobSink final : public control::JobSink, public control::PolicyView {
 public:
  PolicyJobSink(const store::Lower& lower, store::CacheFront& cache)
      : lower_(lower), cache_(cache) {}

  Result<std::vector<cache::SampleRef>> ResolveSamples(
      const std::string& root, const std::vector<std::string>& paths) override;
  Status OnConfigured(const cache::JobSpec& spec, const control::JobConfig& config) override;
  Status OnSamples(control::JobId job, std::vector<cache::SampleRef> samples) override;
  Status OnOrder(control::JobId job, uint32_t epoch, std::vector<uint32_t> order) override;
  void OnEpochBegin(control::JobId job, uint32_t epoch) override;
  void OnEpochRestart(control::JobId job) override;
  void OnJobEnd(control::JobId job) override;

  std::optional<control::JobFigures> Figures(cache::JobId id) const override;

  // Told the LOWER path of every sample resolved (the prefetcher's paths).
  // REQUIRES: set before the first samples write.
  using PathListener = std::function<void(cache::ObjectId, const std::string&)>;
  void SetPathListener(PathListener fn) { on_path_ = std::move(fn); }

 private:
  PathListener on_path_;
  const store::Lower& lower_;
  store::CacheFront& cache_;
  mutable std::mutex history_mu_;
  // Finished epochs' counters per job, oldest first.
  std::map<cache::JobId, std::vector<cache::EpochCounters>> history_;  // guarded by history_mu_
};

class RegistryAttributor final : public fs::Attributor {
 public:
  explicit RegistryAttributor(control::JobRegistry& registry) : registry_(registry) {}
  Attribution Attribute(pid_t pid, uid_t uid, cache::ObjectId object) override;

 private:
  control::JobRegistry& registry_;
};

}  // namespace epochfs
