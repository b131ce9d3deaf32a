// JobRegistry: the jobs registered under .epochfs/jobs/, their control files,
// and the per-read question "which job, which sample, which epoch, which batch".
//
// The fs layer calls it for every control-file operation and for every
// dataset read-open; it never sees FUSE types. Lifecycle of a job:
//
//   Register (mkdir) → kRegistered
//   WriteConfig      → kConfigured   (JobSink::OnConfigured: Policy::AddJob)
//   WriteSamples     (needs config)  (JobSink::ResolveSamples, then OnSamples)
//   WriteOrder K     (needs samples) (JobSink::OnOrder: Policy::SetOrder)
//   WriteEpoch K / first attributed access begins an epoch → kRunning
//                                    (JobSink::OnEpochBegin: Policy::BeginEpoch)
//   WritePosition K P                (JobSink::OnPosition: Policy::Progress)
//   last epoch's order consumed, or an epoch >= `epochs` begins → kDone
//   Remove (rmdir)   → gone          (JobSink::OnJobEnd: Policy::EndJob)
//   every registered process exited → orphaned (ReapOrphans); cache kept
//   a write by its owner while orphaned → re-attached; same JobId, state,
//                                    orders and cache; the current epoch may
//                                    restart (JobSink::OnEpochRestart:
//                                    Policy::RestartEpoch)
//   orphaned for the grace → gone    (as by Remove)
//
// Files are write-once in substance: config and samples may be rewritten only
// with identical content (a restarted job re-declares itself), an order only
// until its epoch begins. Epochs are 0-based: 0 .. epochs-1. What a job may
// declare (orders, epoch markers, positions) follows the rules of
// include/epochfs/declarations/, the same the cache policies apply.
//
// Re-attach: a job is orphaned when it has registered pids and
// none of them runs any more (marked by ReapOrphans; a job that has begun an
// epoch is also found so by a write before the next reaper tick). Its name
// stays taken: mkdir of it fails with Exists (the kernel answers EEXIST
// itself, since the directory is visible).
// The restarted job's first write to one of its files (config, samples,
// order/K, epoch, pids, position) by the owner or root re-attaches it: the
// dead pids are forgotten, the writer's pid is registered and the job keeps
// everything else. Its current epoch K restarts (EpochTracker::RestartEpoch,
// Policy::RestartEpoch: re-reads count for K, not for K+1) when K was not
// complete at the crash (the trainer cannot have finished it), and when the
// restarted job writes `epoch` K before its first read (it says so); a
// complete K with no such marker lets the next read begin K+1. Until the
// re-attached job confirms its declarations (an identical samples write, an
// order, an epoch marker, a position report or a sample read), a *different*
// config or samples list starts the job afresh in the same directory: the
// old cache is released (JobSink::OnJobEnd) and the new declaration is taken
// as a first one.
//
// Errors: every Write* returns InvalidArgument for bad content (the fs layer
// fails the write/flush with EINVAL), PermissionDenied unless the caller is the
// job's owner or root, NotFound for an unknown job. Every failed write also
// records "FILE: reason" as the job's last_error (readable in `status`);
// nothing already accepted is changed by a failed write (a write by the owner
// to an orphan re-attaches it even when its content is refused).
//
// Implemented by concept: job_registry.cc (registration, removal, orphans,
// snapshots), job_registry_writes.cc (the control files' writes),
// job_registry_reads.cc (a dataset read's job, sample and epoch).
//
// Thread safety: all methods are thread-safe. Lock order, outermost first:
//   JobRegistry::mu_  →  Attributor's mutex  →  the policy's mutex (inside JobSink)
// JobSink callbacks other than ResolveSamples run with mu_ held and must not
// call back into the registry. Nothing holding the policy mutex may call the
// registry.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "epochfs/control/path_list.h"
#include "epochfs/cache/policy.h"
#include "epochfs/common/access_rule.h"
#include "epochfs/common/status.h"
#include "epochfs/control/attribution.h"
#include "epochfs/control/control_parse.h"
#include "epochfs/control/epoch_tracker.h"
#include "epochfs/control/sample_index.h"
#include "epochfs/declarations/declaration_rules.h"

namespace epochfs::control {

// Where a job is in its control lifecycle (above). Not the cache policy's
// view of the job (cache::JobState: warm-up, caching, ...), which `status`
// shows instead once an epoch has begun.
enum class JobPhase : uint8_t { kRegistered, kConfigured, kRunning, kDone };
// "registered" | "configured" | "running" | "done"
const char* JobPhaseName(JobPhase s);

// A job's samples list as accepted: sample k is the LOWER path
// Path(k) = root/paths[k] (paths[k] alone when root is ""), normalised.
struct SampleList {
  std::string root;
  PathList paths;
  // The job owner's credentials, for what the daemon loads on the job's
  // behalf (a prefetch loads only what they may read); null for root's jobs.
  std::shared_ptr<const Credentials> owner;
  // See ResolvedSamples::hidden.
  std::vector<bool> hidden;
  bool Hidden(size_t k) const { return k < hidden.size() && hidden[k]; }
  std::string Path(size_t k) const {
    return root.empty() ? std::string(paths[k]) : root + "/" + std::string(paths[k]);
  }
};

// What JobSink::ResolveSamples makes of a samples list.
struct ResolvedSamples {
  std::vector<cache::SampleRef> refs;  // sample k's object, in list order
  // Empty, or one per sample: true where the job's owner may not reach the
  // sample on LOWER (a directory on its way they may not search). Such a
  // sample is never loaded; it is reported as a missing file is.
  std::vector<bool> hidden;
};

// Where the registry forwards accepted changes: implemented by the daemon
// (resolve paths on the lower store, drive the Policy, apply its Decisions).
class JobSink {
 public:
  virtual ~JobSink() = default;
  // Called WITHOUT the registry mutex (may block on lower-store I/O). Maps
  // `paths` (relative to dataset subdir `root`) to objects, in order, as the
  // job's owner `owner` reaches them (uid 0: anything). An error fails the
  // samples write (InvalidArgument recommended, naming the path); a path the
  // owner may not reach must fail or be hidden exactly as one that does not
  // exist.
  virtual Result<ResolvedSamples> ResolveSamples(const std::string& root, const PathList& paths,
                                                 const Credentials& owner) = 0;
  // Called with the registry mutex held. An error fails the write; the
  // registry then commits nothing.
  virtual Status OnConfigured(const cache::JobSpec& spec, const JobConfig& config) = 0;
  // `list`: the paths behind `samples`, with the owner's credentials and the
  // hidden samples, shared (the daemon keeps it to find a sample's file for
  // prefetch).
  virtual Status OnSamples(JobId job, std::vector<cache::SampleRef> samples,
                           std::shared_ptr<const SampleList> list) = 0;
  virtual Status OnOrder(JobId job, uint32_t epoch, std::vector<uint32_t> order) = 0;
  virtual void OnEpochBegin(JobId job, uint32_t epoch) = 0;
  // The job reports its position in its current epoch (Policy::Progress).
  virtual void OnPosition(JobId /*job*/, uint32_t /*epoch*/, uint64_t /*position*/) {}
  // A re-attached job restarts its current epoch (Policy::RestartEpoch).
  virtual void OnEpochRestart(JobId /*job*/) {}
  virtual void OnJobEnd(JobId job) = 0;
};

// How OnAccess attributed a read.
enum class AttributionSource : uint8_t { kNone, kProcess, kOrders };

struct AccessInfo {
  JobId job = kNoJob;
  AttributionSource source = AttributionSource::kNone;
  int64_t sample = -1;            // index in the job's sample list, -1 if not a sample
  std::optional<uint32_t> epoch;  // epoch the access counts for (samples only)
  int64_t batch = -1;             // batch in that epoch's declared order, -1 if unknown
  bool repeat = false;            // the sample was already consumed in `epoch`
};

// A copy of the registry's record of one job (its control state), for
// readdir, `pids` and `status`; the policy's figures for the job are
// cache::JobSnapshot (PolicyView).
struct JobRecord {
  JobId id = kNoJob;
  std::string name;
  uid_t owner = 0;
  JobPhase state = JobPhase::kRegistered;
  std::optional<JobConfig> config;
  size_t sample_count = 0;
  std::optional<uint32_t> epoch;          // current epoch
  std::vector<uint32_t> declared_epochs;  // epochs with an order held (order/ listing)
  std::optional<PositionReport> position;  // the last `position` report accepted
  uint64_t accesses = 0;                  // attributed read-opens
  std::string last_error;                 // "" when no write ever failed
  std::vector<pid_t> pids;                // registered pids, ascending
  std::optional<uint64_t> orphaned_since_ns;  // set while every registered process is gone
                                              // (the clock ReapOrphans is given)
  uint32_t reattached = 0;                    // times a restarted job re-attached
  uint32_t fresh_starts = 0;                  // re-attaches that declared a different job
};

struct JobRegistryOptions {
  size_t max_jobs = 1024;
  size_t max_jobs_per_user = 64;  // limits.jobs_per_user; root is not bounded
  // limits.samples_per_user: samples one user's jobs hold together (each costs
  // the daemon up to about 200 bytes while its job lives); root is not bounded.
  uint64_t max_samples_per_user = uint64_t{1} << 23;
  uint32_t prefetch_factor = 2;  // read-ahead window: loaders × prefetch_factor batches
  AttributorOptions attributor;
};

class JobRegistry {
 public:
  // `sink` must outlive the registry. `proc` reads /proc (MakeProcReader()).
  JobRegistry(JobSink& sink, std::unique_ptr<ProcReader> proc, JobRegistryOptions options = {});
  JobRegistry(const JobRegistry&) = delete;
  JobRegistry& operator=(const JobRegistry&) = delete;
  ~JobRegistry();

  // Job names: [A-Za-z0-9._-]{1,64}, not "." or "..".
  static Status ValidateName(std::string_view name);
  // The registry keys jobs by UserKey(name, owner) (common/user_key.h): a valid name,
  // plus "@UID" for an owner other than root; every `name` below is a key.
  // A key is a valid name optionally followed by '@' and 1 to 10 digits (the
  // caller, the ControlTree, makes the suffix match the owner).
  static Status ValidateKey(std::string_view key);

  // mkdir jobs/NAME by `owner` (their uid, groups kept for the samples check,
  // JobSink::ResolveSamples). `creator_pid` (the mkdir caller as FUSE reports
  // it; 0 = unknown) is registered as one of the job's pids when it is alive.
  // Exists (Code::kExists) for a taken name, an orphaned one too; NoSpace
  // past max_jobs, past max_jobs_per_user for a non-root owner, or when ids
  // run out (ids are never reused within the registry's life).
  Result<JobId> Register(std::string_view name, const Credentials& owner, pid_t creator_pid);
  // rmdir jobs/NAME. Calls JobSink::OnJobEnd.
  Status Remove(std::string_view name, uid_t caller);
  // OK when `caller` may write NAME's files (owner or root), else
  // NotPermitted (recorded as last_error against `file`); NotFound for an
  // unknown job. The fs layer calls it when a control file is opened for
  // writing, so that a refused writer fails at open().
  Status CheckWrite(std::string_view name, uid_t caller, std::string_view file);
  // Records "FILE: reason" as NAME's last_error, for control files handled
  // outside the registry (spill_schedule, progress). Unknown NAME: ignored.
  void RecordError(std::string_view name, std::string_view file, const Status& s);
  // True when no job is registered (lock-free: the read path asks it first).
  bool empty() const;

  // The complete content of one control-file write (fs layer: at flush).
  // `writer_pid` (FUSE ctx pid, 0 = unknown) is registered when the write
  // re-attaches an orphaned job.
  Status WriteConfig(std::string_view name, uid_t caller, std::string_view text,
                     pid_t writer_pid = 0);
  // The samples are resolved as the job's owner reaches them: with the
  // writer's credentials when the owner writes (they replace those kept),
  // else (root) with those kept from the owner's last mkdir or samples write.
  Status WriteSamples(std::string_view name, const Credentials& caller, std::string_view text,
                      pid_t writer_pid = 0);
  Status WriteOrder(std::string_view name, uid_t caller, uint32_t epoch, std::string_view text,
                    pid_t writer_pid = 0);
  Status WriteEpoch(std::string_view name, uid_t caller, std::string_view text,
                    pid_t writer_pid = 0);
  // `position` ("K P", ParsePosition): the job has handed out the first P
  // samples of epoch K's order (JobSink::OnPosition). InvalidArgument unless
  // an order for K is held and P is at most its length, or when K is later
  // than the job's current epoch (write `epoch` first); a report for an
  // epoch before the current one is late, accepted and ignored.
  Status WritePosition(std::string_view name, uid_t caller, std::string_view text,
                       pid_t writer_pid = 0);
  // Adds the listed pids, and `writer_pid` when non-zero (the writer as FUSE
  // reports it: right even when the job runs in another pid namespace). An
  // orphaned job is re-attached first (its dead pids forgotten).
  Status WritePids(std::string_view name, uid_t caller, std::string_view text, pid_t writer_pid);

  // One dataset read-open by process `pid` (FUSE ctx pid, 0 allowed) of user
  // `reader` (kAnyOwner: not known) of `object`: attribution (registered pids
  // and descendants; else, by orders, the single active job whose held orders
  // include the object, among the jobs the reader may be: owned by `reader`,
  // and, unless pid is 0 (another pid namespace), jobs none of whose
  // registered processes is alive, since a reader outside a running job's
  // processes is someone else (a backup, md5sum); else none), then epoch
  // tracking. Only attributed reads advance a job's epochs. Reads /proc. May
  // call JobSink::OnEpochBegin.
  AccessInfo OnAccess(pid_t pid, cache::ObjectId object, uid_t reader = kAnyOwner);

  // Orphans: a job whose registered processes have all exited
  // without rmdir is marked orphaned at `now_ns` (it keeps its cache, so that
  // a restarted job of the same name, which re-registers a live pid, resumes
  // warm); one orphaned for at least `grace_ns` is removed as by rmdir. A job
  // with no registered pid is never orphaned. Reads /proc. Returns the names
  // removed. Called periodically by the daemon.
  std::vector<std::string> ReapOrphans(uint64_t now_ns, uint64_t grace_ns);

  // Sorted; only the jobs of `owner` unless it is kAnyOwner.
  std::vector<std::string> JobNames(uid_t owner = kAnyOwner) const;
  Result<JobRecord> Snapshot(std::string_view name) const;
  Result<JobId> Find(std::string_view name) const;

 private:
  // The registry's record of one job; guarded by mu_.
  struct Job {
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
    // starts the job afresh (see "Re-attach" above).
    bool reattach_pending = false;
    // Re-attached and nothing read since: an `epoch` marker for the current
    // epoch restarts it.
    bool restart_on_marker = false;
  };

  // REQUIRES: mu_ held.
  Result<Job*> FindForWrite(std::string_view name, uid_t caller) const;
  // REQUIRES: mu_ held. The job with that id; null once removed.
  Job* FindByIdLocked(JobId id) const;
  // Records a failure as the job's last_error ("FILE: reason"); returns `s`.
  Status Fail(Job* job, const char* file, Status s);
  // REQUIRES: mu_ held. The start of every control-file write: the job as
  // FindForWrite finds it, re-attached first when it is orphaned.
  Result<Job*> WritableLocked(std::string_view name, uid_t caller, pid_t writer_pid);
  // REQUIRES: mu_ held. `file` declares what needs the samples list first:
  // declarations::CheckSamplesWritten, a failure recorded against `file`.
  Status SamplesWrittenLocked(Job* job, declarations::NeedsSamples what, const char* file);
  // REQUIRES: mu_ held. Takes `cfg` as the job's config: JobSink::OnConfigured
  // (Policy::AddJob), then kConfigured; the sink's refusal is recorded
  // against `file` and nothing changes.
  Status ConfigureLocked(Job* job, const JobConfig& cfg, const char* file);
  // REQUIRES: mu_ held. Forwards a tracker result to the sink and the state.
  void ApplyTracked(Job* job, const TrackedAccess& t);
  void BeginEpochLocked(Job* job, uint32_t epoch);
  // REQUIRES: mu_ held. Removes `job` (rmdir or reaped orphan).
  void RemoveLocked(Job* job);
  // REQUIRES: mu_ held. Marked orphaned, or it has begun an epoch and every
  // registered pid is gone (reads /proc).
  bool OrphanedLocked(Job* job) const;
  // REQUIRES: mu_ held. See "Re-attach" above.
  void ReattachLocked(Job* job, pid_t pid);
  // REQUIRES: mu_ held, job->tracker set. Tracker and policy restart epoch K.
  void RestartEpochLocked(Job* job);
  // REQUIRES: mu_ held. The re-attached job declared something different:
  // release the old one's policy state and forget its declarations.
  void StartFreshLocked(Job* job);

  JobSink& sink_;
  const JobRegistryOptions opt_;
  Attributor attributor_;  // own mutex, taken after mu_

  mutable std::mutex mu_;  // the registry mutex: before Attributor's and the policy's
  std::map<std::string, std::unique_ptr<Job>, std::less<>> jobs_;  // guarded by mu_
  std::unordered_map<JobId, Job*> by_id_;                          // guarded by mu_
  JobId next_id_ = 1;                                              // guarded by mu_
  bool ids_exhausted_ = false;                                     // guarded by mu_
  std::atomic<size_t> job_count_{0};  // jobs_.size(), readable without mu_
};

}  // namespace epochfs::control
