// JobRegistry: the jobs' lifetime: registration (names, limits, ids),
// removal, orphans and their re-attach or fresh start, and the lookups and
// snapshots readdir and `status` show. The writes of the jobs' files are in
// job_registry_writes.cc, the reads they are asked about in
// job_registry_reads.cc.
#include "epochfs/control/job_registry.h"

#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "epochfs/common/log.h"

namespace epochfs::control {

const char* JobPhaseName(JobPhase s) {
  switch (s) {
    case JobPhase::kRegistered: return "registered";
    case JobPhase::kConfigured: return "configured";
    case JobPhase::kRunning: return "running";
    case JobPhase::kDone: return "done";
  }
  return "unknown";
}

namespace {

Status Exists(std::string m) { return {Code::kExists, std::move(m)}; }

}  // namespace

JobRegistry::JobRegistry(JobSink& sink, std::unique_ptr<ProcReader> proc,
                         JobRegistryOptions options)
    : sink_(sink), opt_(options), attributor_(std::move(proc), options.attributor) {}

JobRegistry::~JobRegistry() = default;

Status JobRegistry::ValidateKey(std::string_view key) {
  const size_t at = key.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view uid = key.substr(at + 1);
    bool digits = !uid.empty() && uid.size() <= 10;
    for (char c : uid) digits = digits && c >= '0' && c <= '9';
    if (digits) key = key.substr(0, at);
  }
  return ValidateName(key);
}

Status JobRegistry::ValidateName(std::string_view name) {
  if (name.empty() || name.size() > 64) {
    return InvalidArgument("job name must be 1 to 64 characters, got " +
                           std::to_string(name.size()));
  }
  if (name == "." || name == "..") return InvalidArgument("job name cannot be '.' or '..'");
  for (char c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) {
      return InvalidArgument("job name " + QuoteForMessage(name) +
                             " may only contain A-Z a-z 0-9 . _ -");
    }
  }
  return Status::Ok();
}

Result<JobId> JobRegistry::Register(std::string_view name, const Credentials& who,
                                    pid_t creator_pid) {
  const uid_t owner = who.uid;
  if (Status s = ValidateKey(name); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  if (jobs_.find(name) != jobs_.end()) return Exists("job '" + std::string(name) + "' exists");
  if (jobs_.size() >= opt_.max_jobs) {
    return NoSpace("too many jobs (limit " + std::to_string(opt_.max_jobs) + ")");
  }
  if (owner != 0) {
    size_t own = 0;
    for (const auto& [n, j] : jobs_) own += j->owner == owner ? 1 : 0;
    if (own >= opt_.max_jobs_per_user) {
      return NoSpace("uid " + std::to_string(owner) + " has " + std::to_string(own) +
                     " jobs (limits.jobs_per_user)");
    }
  }
  if (ids_exhausted_) return NoSpace("job ids exhausted; restart the daemon");
  auto job = std::make_unique<Job>();
  job->id = next_id_;
  job->name = std::string(name);
  job->owner = owner;
  job->owner_creds = std::make_shared<const Credentials>(who);
  if (next_id_ == std::numeric_limits<JobId>::max()) {
    ids_exhausted_ = true;
  } else {
    ++next_id_;
  }
  JobId id = job->id;
  by_id_[id] = job.get();
  jobs_.emplace(job->name, std::move(job));
  job_count_.store(jobs_.size(), std::memory_order_relaxed);
  // Best effort: the creator may be gone already, or belong to another job.
  if (creator_pid > 0) (void)attributor_.AddPid(id, creator_pid);
  return id;
}

Result<JobRegistry::Job*> JobRegistry::FindForWrite(std::string_view name, uid_t caller) const {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return NotFound("no job '" + std::string(name) + "'");
  Job* job = it->second.get();
  if (caller != 0 && caller != job->owner) {
    return NotPermitted("uid " + std::to_string(caller) + " may not write job '" + job->name +
                        "' (it belongs to uid " + std::to_string(job->owner) + ")");
  }
  return job;
}

JobRegistry::Job* JobRegistry::FindByIdLocked(JobId id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

Status JobRegistry::CheckWrite(std::string_view name, uid_t caller, std::string_view file) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Job*> r = FindForWrite(name, caller);
  if (r.status().code() == Code::kNotPermitted) {
    // Tell the owner in `status` that someone else tried.
    jobs_.find(name)->second->last_error = std::string(file) + ": " + r.status().message();
  }
  return r.status();
}

void JobRegistry::RecordError(std::string_view name, std::string_view file, const Status& s) {
  if (s.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(name);
  if (it != jobs_.end()) it->second->last_error = std::string(file) + ": " + s.message();
}

bool JobRegistry::empty() const { return job_count_.load(std::memory_order_relaxed) == 0; }

Status JobRegistry::Fail(Job* job, const char* file, Status s) {
  if (job != nullptr && !s.ok()) job->last_error = std::string(file) + ": " + s.message();
  return s;
}

Status JobRegistry::Remove(std::string_view name, uid_t caller) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Job*> r = FindForWrite(name, caller);
  if (!r.ok()) return r.status();
  RemoveLocked(r.value());
  return Status::Ok();
}

void JobRegistry::RemoveLocked(Job* job) {
  const JobId id = job->id;
  const std::string name = job->name;
  sink_.OnJobEnd(id);
  attributor_.RemoveJob(id);
  by_id_.erase(id);
  jobs_.erase(jobs_.find(name));
  job_count_.store(jobs_.size(), std::memory_order_relaxed);
}

bool JobRegistry::OrphanedLocked(Job* job) const {
  if (job->orphaned_since_ns) return true;
  // Before the reaper's tick: only a job that has begun an epoch (a job being
  // set up from a shell registers `mkdir`'s short-lived pid, then its own).
  if (!job->tracker || !job->tracker->current_epoch()) return false;
  const Attributor::Liveness l = attributor_.Alive(job->id);
  return l.registered > 0 && l.alive == 0;
}

void JobRegistry::ReattachLocked(Job* job, pid_t pid) {
  if (pid > 0) (void)attributor_.AddPid(job->id, pid);  // best effort, as in Register
  attributor_.ForgetExited(job->id);
  job->orphaned_since_ns.reset();
  ++job->reattached;
  job->reattach_pending = true;
  job->restart_on_marker = true;
  // K not complete at the crash: the trainer had not finished it, so the
  // restarted job reads it again.
  if (job->tracker && job->tracker->current_epoch() && !job->tracker->current_complete()) {
    RestartEpochLocked(job);
  }
}

void JobRegistry::RestartEpochLocked(Job* job) {
  job->tracker->RestartEpoch();
  sink_.OnEpochRestart(job->id);
}

void JobRegistry::StartFreshLocked(Job* job) {
  sink_.OnJobEnd(job->id);  // releases the old declarations' cache
  job->config.reset();
  job->state = JobPhase::kRegistered;
  job->sample_count = 0;
  job->samples_hash = 0;
  job->object_to_sample = SampleIndex();
  job->tracker.reset();
  job->position.reset();
  job->reattach_pending = false;
  job->restart_on_marker = false;
  ++job->fresh_starts;
}

std::vector<std::string> JobRegistry::ReapOrphans(uint64_t now_ns, uint64_t grace_ns) {
  std::vector<std::pair<JobId, Attributor::Liveness>> seen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, j] : jobs_) seen.emplace_back(j->id, Attributor::Liveness{});
  }
  for (auto& [id, l] : seen) l = attributor_.Alive(id);  // /proc reads, no registry lock
  std::vector<std::string> removed, orphaned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, l] : seen) {
      Job* job = FindByIdLocked(id);
      if (job == nullptr) continue;  // removed meanwhile
      if (l.registered == 0 || l.alive > 0 || attributor_.Alive(id).alive > 0) {
        job->orphaned_since_ns.reset();
        continue;
      }
      if (!job->orphaned_since_ns) {
        job->orphaned_since_ns = now_ns;
        orphaned.push_back(job->name);
      }
      if (now_ns - *job->orphaned_since_ns >= grace_ns) {
        removed.push_back(job->name);
        RemoveLocked(job);
      }
    }
  }
  for (const std::string& name : orphaned) {
    log::Info("job " + name + ": every process exited; orphaned, its cache kept for " +
              std::to_string(grace_ns / 1'000'000'000) +
              " s (jobs.orphan_grace) for a restart to re-attach");
  }
  return removed;
}


std::vector<std::string> JobRegistry::JobNames(uid_t owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  out.reserve(jobs_.size());
  for (const auto& [name, j] : jobs_) {
    if (owner == kAnyOwner || j->owner == owner) out.push_back(name);
  }
  return out;
}

Result<JobId> JobRegistry::Find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return NotFound("no job '" + std::string(name) + "'");
  return it->second->id;
}

Result<JobRecord> JobRegistry::Snapshot(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return NotFound("no job '" + std::string(name) + "'");
  const Job& j = *it->second;
  JobRecord s;
  s.id = j.id;
  s.name = j.name;
  s.owner = j.owner;
  s.state = j.state;
  s.config = j.config;
  s.sample_count = j.sample_count;
  if (j.tracker) {
    s.epoch = j.tracker->current_epoch();
    s.declared_epochs = j.tracker->declared_epochs();
  }
  s.position = j.position;
  s.accesses = j.accesses;
  s.last_error = j.last_error;
  s.pids = attributor_.Pids(j.id);
  s.orphaned_since_ns = j.orphaned_since_ns;
  s.reattached = j.reattached;
  s.fresh_starts = j.fresh_starts;
  return s;
}

}  // namespace epochfs::control
