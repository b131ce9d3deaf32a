// JobRegistry: a dataset read-open attributed to a job (by its registered
// processes, else by the orders it holds), and the epoch tracking it drives:
// the epoch a read begins, the job done after its last.
#include "epochfs/control/job_registry.h"

#include <optional>

namespace epochfs::control {

void JobRegistry::BeginEpochLocked(Job* job, uint32_t epoch) {
  if (epoch >= job->config->epochs) {  // reads past the last epoch (evaluation, extra passes)
    job->state = JobPhase::kDone;
    return;
  }
  if (job->state != JobPhase::kDone) job->state = JobPhase::kRunning;
  sink_.OnEpochBegin(job->id, epoch);
}

void JobRegistry::ApplyTracked(Job* job, const TrackedAccess& t) {
  if (t.began) BeginEpochLocked(job, *t.began);
  if (t.completed && *t.completed + 1 >= job->config->epochs) job->state = JobPhase::kDone;
}

AccessInfo JobRegistry::OnAccess(pid_t pid, cache::ObjectId object, uid_t reader) {
  const JobId via_process = attributor_.Lookup(pid);  // before mu_: reads /proc
  AccessInfo info;
  std::lock_guard<std::mutex> lock(mu_);
  Job* job = nullptr;
  if (via_process != kNoJob) {
    job = FindByIdLocked(via_process);
    if (job != nullptr) info.source = AttributionSource::kProcess;
  }
  if (job == nullptr) {
    int matches = 0;
    for (auto& [name, j] : jobs_) {
      if (j->state == JobPhase::kDone || !j->tracker) continue;
      const std::optional<uint32_t> s = j->object_to_sample.Find(object);
      if (s && j->tracker->InPendingOrders(*s)) {
        if (reader != kAnyOwner && reader != j->owner) continue;  // another user
        if (pid != 0 && attributor_.Alive(j->id).alive > 0) continue;  // not its process
        ++matches;
        job = j.get();
      }
    }
    if (matches != 1) return info;
    info.source = AttributionSource::kOrders;
  }
  info.job = job->id;
  ++job->accesses;
  if (!job->tracker) return info;
  const std::optional<uint32_t> s = job->object_to_sample.Find(object);
  if (!s) return info;
  info.sample = *s;
  job->reattach_pending = false;
  job->restart_on_marker = false;
  TrackedAccess t = job->tracker->OnAccess(*s);
  ApplyTracked(job, t);
  info.epoch = t.epoch;
  info.batch = t.batch;
  info.repeat = t.repeat;
  return info;
}

}  // namespace epochfs::control
