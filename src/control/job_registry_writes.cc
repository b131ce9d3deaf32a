// JobRegistry: the control files' writes: config, samples, order/K, epoch,
// position, pids (the rules in job_registry.h). Each finds the job as its
// writer may write it (re-attaching an orphan), checks what it declares
// against the declarations' rules, forwards it to the JobSink and records a
// failure as the job's last_error.
#include "epochfs/control/job_registry.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "epochfs/common/hash.h"
#include "epochfs/control/pid_namespace.h"
#include "epochfs/declarations/declaration_rules.h"

namespace epochfs::control {
namespace {

using declarations::NeedsSamples;

uint64_t Fingerprint(const PathList& paths) {
  uint64_t h = paths.size();
  for (size_t k = 0; k < paths.size(); ++k) {
    const std::string_view p = paths[k];
    h = (h ^ Checksum(p.data(), p.size())) * 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

Result<JobRegistry::Job*> JobRegistry::WritableLocked(std::string_view name, uid_t caller,
                                                      pid_t writer_pid) {
  Result<Job*> r = FindForWrite(name, caller);
  if (r.ok() && OrphanedLocked(r.value())) ReattachLocked(r.value(), writer_pid);
  return r;
}

Status JobRegistry::SamplesWrittenLocked(Job* job, declarations::NeedsSamples what,
                                         const char* file) {
  return Fail(job, file, declarations::CheckSamplesWritten(job->tracker != nullptr, what));
}

Status JobRegistry::ConfigureLocked(Job* job, const JobConfig& cfg, const char* file) {
  cache::JobSpec spec;
  spec.id = job->id;
  spec.name = job->name;
  spec.batch_size = cfg.batch_size;
  spec.epochs = cfg.epochs;
  spec.loaders = cfg.loaders;
  if (Status s = sink_.OnConfigured(spec, cfg); !s.ok()) return Fail(job, file, s);
  job->config = cfg;
  job->state = JobPhase::kConfigured;
  return Status::Ok();
}

Status JobRegistry::WriteConfig(std::string_view name, uid_t caller, std::string_view text,
                                pid_t writer_pid) {
  Result<JobConfig> parsed = ParseJobConfig(text);
  std::lock_guard<std::mutex> lock(mu_);
  Result<Job*> r = WritableLocked(name, caller, writer_pid);
  if (!r.ok()) return r.status();
  Job* job = r.value();
  if (!parsed.ok()) return Fail(job, "config", parsed.status());
  const JobConfig& cfg = parsed.value();
  if (job->config && *job->config != cfg && job->reattach_pending) StartFreshLocked(job);
  if (job->config) {
    if (*job->config == cfg) return Status::Ok();
    return Fail(job, "config",
                InvalidArgument("config is already set and differs; rmdir and mkdir the job to "
                                "change it"));
  }
  return ConfigureLocked(job, cfg, "config");
}

Status JobRegistry::WriteSamples(std::string_view name, const Credentials& who,
                                 std::string_view text, pid_t writer_pid) {
  const uid_t caller = who.uid;
  JobId id;
  std::string root;
  std::shared_ptr<const Credentials> owner;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Result<Job*> r = WritableLocked(name, caller, writer_pid);
    if (!r.ok()) return r.status();
    Job* job = r.value();
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
    if (decided(FindByIdLocked(id), &out)) return out;
  }
  Result<ResolvedSamples> refs = sink_.ResolveSamples(root, parsed.value(), *owner);
  SampleIndex map = refs.ok() ? SampleIndex(refs.value().refs) : SampleIndex();
  std::lock_guard<std::mutex> lock(mu_);
  Job* job = FindByIdLocked(id);
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
    if (Status s = ConfigureLocked(job, cfg, "samples"); !s.ok()) return s;
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
    Result<Job*> r = WritableLocked(name, caller, writer_pid);
    if (!r.ok()) return r.status();
    Job* job = r.value();
    if (Status s = SamplesWrittenLocked(job, NeedsSamples::kOrder, file.c_str()); !s.ok()) return s;
    if (Status s = declarations::CheckEpochInRun(job->config->epochs, epoch); !s.ok()) {
      return Fail(job, file.c_str(), s);
    }
    id = job->id;
    count = job->sample_count;
  }
  Result<std::vector<uint32_t>> order = ParseOrder(text, count);  // without the mutex
  std::lock_guard<std::mutex> lock(mu_);
  Job* job = FindByIdLocked(id);
  if (job == nullptr) return NotFound("job '" + std::string(name) + "' was removed");
  if (!order.ok()) return Fail(job, file.c_str(), order.status());
  if (Status s = SamplesWrittenLocked(job, NeedsSamples::kOrder, file.c_str()); !s.ok()) return s;
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
  Result<Job*> r = WritableLocked(name, caller, writer_pid);
  if (!r.ok()) return r.status();
  Job* job = r.value();
  Result<uint32_t> epoch = ParseEpochMarker(text);
  if (!epoch.ok()) return Fail(job, "epoch", epoch.status());
  if (Status s = SamplesWrittenLocked(job, NeedsSamples::kEpochMarker, "epoch"); !s.ok()) return s;
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
  Result<Job*> r = WritableLocked(name, caller, writer_pid);
  if (!r.ok()) return r.status();
  Job* job = r.value();
  Result<PositionReport> report = ParsePosition(text);
  if (!report.ok()) return Fail(job, "position", report.status());
  if (Status s = SamplesWrittenLocked(job, NeedsSamples::kPosition, "position"); !s.ok()) return s;
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

}  // namespace epochfs::control
