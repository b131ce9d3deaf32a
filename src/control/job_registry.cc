#include "epochfs/control/job_registry.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "epochfs/common/hash.h"
#include "epochfs/common/log.h"
#include "epochfs/control/pid_namespace.h"
#include "epochfs/declarations/declaration_rules.h"

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

// Object → sample index of one job's list: (object, sample) pairs sorted, so
// a list of millions is one allocation and one sort (built without the
// registry mutex). An object listed twice (two paths, one id) is its first
// sample.
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

}  // namespace

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

namespace {

uint64_t Fingerprint(const PathList& paths) {
  uint64_t h = paths.size();
  for (size_t k = 0; k < paths.size(); ++k) {
    const std::string_view p = paths[k];
    h = (h ^ Checksum(p.data(), p.size())) * 0x100000001b3ULL;
  }
  return h;
}

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

void JobRegistry::ReattachIfOrphanedLocked(Job* job, pid_t writer_pid) {
  if (OrphanedLocked(job)) ReattachLocked(job, writer_pid);
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
      auto it = by_id_.find(id);
      if (it == by_id_.end()) continue;  // removed meanwhile
      Job* job = it->second;
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

Status JobRegistry::WriteConfig(std::string_view name, uid_t caller, std::string_view text,
                                pid_t writer_pid) {
  Result<JobConfig> parsed = ParseJobConfig(text);
  std::lock_guard<std::mutex> lock(mu_);
  Result<Job*> r = FindForWrite(name, caller);
  if (!r.ok()) return r.status();
  Job* job = r.value();
  ReattachIfOrphanedLocked(job, writer_pid);
  if (!parsed.ok()) return Fail(job, "config", parsed.status());
  const JobConfig& cfg = parsed.value();
  if (job->config && *job->config != cfg && job->reattach_pending) StartFreshLocked(job);
  if (job->config) {
    if (*job->config == cfg) return Status::Ok();
    return Fail(job, "config",
                InvalidArgument("config is already set and differs; rmdir and mkdir the job to "
                                "change it"));
  }
  cache::JobSpec spec;
  spec.id = job->id;
  spec.name = job->name;
  spec.batch_size = cfg.batch_size;
  spec.epochs = cfg.epochs;
  spec.loaders = cfg.loaders;
  if (Status s = sink_.OnConfigured(spec, cfg); !s.ok()) return Fail(job, "config", s);
  job->config = cfg;
  job->state = JobPhase::kConfigured;
  return Status::Ok();
}

Status JobRegistry::WriteSamples(std::string_view name, const Credentials& who,
                                 std::string_view text, pid_t writer_pid) {
  const uid_t caller = who.uid;
  JobId id;
  std::string root;
  std::shared_ptr<const Credentials> owner;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Result<Job*> r = FindForWrite(name, caller);
    if (!r.ok()) return r.status();
    Job* job = r.value();
    ReattachIfOrphanedLocked(job, writer_pid);
    if (!job->config) {
      return Fail(job, "samples", InvalidArgument("write config before samples"));
    }
    id = job->id;
    root = job->config->root;
    // The owner's own write tells their groups as they are now.
    if (caller == job->owner) job->owner_creds = std::make_shared<const Credentials>(who);
    owner = job->owner_creds;
  }
  // Parsing and resolving run without the mutex: lists can be millions long
  // and resolving touches the lower store.
  Result<PathList> parsed = ParseSampleList(text);
  uint64_t fp = parsed.ok() ? Fingerprint(parsed.value()) : 0;
  auto relock_same_job = [&]() -> Job* {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : it->second;
  };
  // Returns true when the write is decided (*out set): an error or a repeat.
  auto decided = [&](Job* job, Status* out) -> bool {
    if (job == nullptr) {
      *out = NotFound("job '" + std::string(name) + "' was removed");
      return true;
    }
    if (!parsed.ok()) {
      *out = Fail(job, "samples", parsed.status());
      return true;
    }
    if (job->owner != 0) {
      uint64_t held = 0;  // by the owner's other jobs
      for (const auto& [n, j] : jobs_) {
        if (j.get() != job && j->owner == job->owner) held += j->sample_count;
      }
      if (held + parsed.value().size() > opt_.max_samples_per_user) {
        *out = Fail(job, "samples",
                    NoSpace(std::to_string(parsed.value().size()) + " samples; uid " +
                            std::to_string(job->owner) + "'s jobs hold " + std::to_string(held) +
                            " of at most " + std::to_string(opt_.max_samples_per_user) +
                            " (limits.samples_per_user)"));
        return true;
      }
    }
    if (job->tracker) {
      if (job->sample_count == parsed.value().size() && job->samples_hash == fp) {
        job->reattach_pending = false;  // the restarted job is the same job
        *out = Status::Ok();
      } else if (job->reattach_pending) {
        return false;  // a different job under the old name: starts afresh below
      } else {
        *out = Fail(job, "samples",
                    InvalidArgument("samples are already set and differ; rmdir and mkdir the job "
                                    "to change them"));
      }
      return true;
    }
    return false;
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    Status out;
    if (decided(relock_same_job(), &out)) return out;
  }
  Result<ResolvedSamples> refs = sink_.ResolveSamples(root, parsed.value(), *owner);
  SampleIndex map = refs.ok() ? SampleIndex(refs.value().refs) : SampleIndex();
  std::lock_guard<std::mutex> lock(mu_);
  Job* job = relock_same_job();
  Status out;
  if (decided(job, &out)) return out;
  if (!job->config || job->config->root != root) {  // a re-attach started it afresh meanwhile
    return Fail(job, "samples", InvalidArgument("config changed during the samples write; write "
                                                "the samples again"));
  }
  if (!refs.ok()) return Fail(job, "samples", refs.status());
  if (refs.value().refs.size() != parsed.value().size() ||
      (!refs.value().hidden.empty() && refs.value().hidden.size() != parsed.value().size())) {
    return Fail(job, "samples", Internal("sample resolution returned a different count"));
  }
  if (job->tracker) {  // re-attached with a different list: the config stays
    const JobConfig cfg = *job->config;
    StartFreshLocked(job);
    cache::JobSpec spec;
    spec.id = job->id;
    spec.name = job->name;
    spec.batch_size = cfg.batch_size;
    spec.epochs = cfg.epochs;
    spec.loaders = cfg.loaders;
    if (Status s = sink_.OnConfigured(spec, cfg); !s.ok()) return Fail(job, "samples", s);
    job->config = cfg;
    job->state = JobPhase::kConfigured;
  }
  const size_t n = refs.value().refs.size();
  auto list = std::make_shared<SampleList>();
  list->root = root;
  list->paths = std::move(parsed).value();
  if (owner->uid != 0) list->owner = owner;
  list->hidden = std::move(refs.value().hidden);
  if (Status s = sink_.OnSamples(id, std::move(refs.value().refs), std::move(list)); !s.ok()) {
    return Fail(job, "samples", s);
  }
  job->sample_count = n;
  job->samples_hash = fp;
  job->object_to_sample = std::move(map);
  EpochTrackerOptions topt;
  topt.batch_size = job->config->batch_size;
  topt.loaders = job->config->loaders;
  topt.prefetch_factor = opt_.prefetch_factor;
  job->tracker = std::make_unique<EpochTracker>(static_cast<uint32_t>(n), topt);
  return Status::Ok();
}

Status JobRegistry::WriteOrder(std::string_view name, uid_t caller, uint32_t epoch,
                               std::string_view text, pid_t writer_pid) {
  const std::string file = "order/" + std::to_string(epoch);
  JobId id;
  size_t count;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Result<Job*> r = FindForWrite(name, caller);
    if (!r.ok()) return r.status();
    Job* job = r.value();
    ReattachIfOrphanedLocked(job, writer_pid);
    if (Status s = declarations::CheckSamplesWritten(job->tracker != nullptr,
                                                     declarations::NeedsSamples::kOrder);
        !s.ok()) {
      return Fail(job, file.c_str(), s);
    }
    if (Status s = declarations::CheckEpochInRun(job->config->epochs, epoch); !s.ok()) {
      return Fail(job, file.c_str(), s);
    }
    id = job->id;
    count = job->sample_count;
  }
  Result<std::vector<uint32_t>> order = ParseOrder(text, count);  // without the mutex
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return NotFound("job '" + std::string(name) + "' was removed");
  Job* job = it->second;
  if (!order.ok()) return Fail(job, file.c_str(), order.status());
  if (Status s = declarations::CheckSamplesWritten(job->tracker != nullptr,
                                                   declarations::NeedsSamples::kOrder);
      !s.ok()) {
    return Fail(job, file.c_str(), s);
  }
  if (job->tracker->SameOrder(epoch, order.value())) {
    job->reattach_pending = false;
    return Status::Ok();
  }
  if (Status s = job->tracker->CheckOrder(epoch, order.value()); !s.ok()) {
    return Fail(job, file.c_str(), s);
  }
  if (Status s = sink_.OnOrder(id, epoch, order.value()); !s.ok()) {
    return Fail(job, file.c_str(), s);
  }
  Status s = job->tracker->SetOrder(epoch, order.value());
  if (s.ok()) job->reattach_pending = false;
  return Fail(job, file.c_str(), s);
}

Status JobRegistry::WriteEpoch(std::string_view name, uid_t caller, std::string_view text,
                                pid_t writer_pid) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Job*> r = FindForWrite(name, caller);
  if (!r.ok()) return r.status();
  Job* job = r.value();
  ReattachIfOrphanedLocked(job, writer_pid);
  Result<uint32_t> epoch = ParseEpochMarker(text);
  if (!epoch.ok()) return Fail(job, "epoch", epoch.status());
  if (Status s = declarations::CheckSamplesWritten(job->tracker != nullptr,
                                                   declarations::NeedsSamples::kEpochMarker);
      !s.ok()) {
    return Fail(job, "epoch", s);
  }
  if (Status s = declarations::CheckEpochInRun(job->config->epochs, epoch.value()); !s.ok()) {
    return Fail(job, "epoch", s);
  }
  Result<bool> began = job->tracker->MarkEpoch(epoch.value());
  if (!began.ok()) return Fail(job, "epoch", began.status());
  job->reattach_pending = false;
  // A re-attached job says it starts the current epoch (again).
  if (!began.value() && job->restart_on_marker) RestartEpochLocked(job);
  job->restart_on_marker = false;
  if (began.value()) BeginEpochLocked(job, epoch.value());
  return Status::Ok();
}

Status JobRegistry::WritePosition(std::string_view name, uid_t caller, std::string_view text,
                                  pid_t writer_pid) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Job*> r = FindForWrite(name, caller);
  if (!r.ok()) return r.status();
  Job* job = r.value();
  ReattachIfOrphanedLocked(job, writer_pid);
  Result<PositionReport> report = ParsePosition(text);
  if (!report.ok()) return Fail(job, "position", report.status());
  if (Status s = declarations::CheckSamplesWritten(job->tracker != nullptr,
                                                   declarations::NeedsSamples::kPosition);
      !s.ok()) {
    return Fail(job, "position", s);
  }
  const auto [epoch, position] = report.value();
  Result<declarations::PositionVerdict> verdict = declarations::CheckPosition(
      job->tracker->current_epoch(), job->tracker->OrderSize(epoch), epoch, position);
  if (!verdict.ok()) return Fail(job, "position", verdict.status());
  if (verdict.value() == declarations::PositionVerdict::kLate) return Status::Ok();  // ignored
  job->position = report.value();
  job->reattach_pending = false;
  sink_.OnPosition(job->id, epoch, position);
  return Status::Ok();
}

Status JobRegistry::WritePids(std::string_view name, uid_t caller, std::string_view text,
                              pid_t writer_pid) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<Job*> r = FindForWrite(name, caller);
  if (!r.ok()) return r.status();
  Job* job = r.value();
  Result<std::vector<pid_t>> written = ParsePidList(text);
  if (!written.ok()) return Fail(job, "pids", written.status());
  // As the writer numbers them (a container's pid namespace): the daemon's.
  Result<std::vector<pid_t>> pids = PidsOfWriter(written.value(), writer_pid);
  if (!pids.ok()) return Fail(job, "pids", pids.status());
  const bool orphaned = OrphanedLocked(job);
  // A user registers only their own processes; root any.
  if (Status s = attributor_.AddPids(job->id, pids.value(), caller == 0 ? kAnyOwner : caller);
      !s.ok()) {
    return Fail(job, "pids", s);
  }
  if (writer_pid > 0) (void)attributor_.AddPid(job->id, writer_pid);  // best effort
  if (orphaned) ReattachLocked(job, 0);
  return Status::Ok();
}

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
    if (auto it = by_id_.find(via_process); it != by_id_.end()) {
      job = it->second;
      info.source = AttributionSource::kProcess;
    }
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
