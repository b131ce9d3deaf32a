#include "epochfs/daemon/daemon.h"

#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "epochfs/cache/policy.h"
#include "epochfs/cache/policy_factory.h"
#include "epochfs/common/log.h"
#include "epochfs/control/control_tree.h"
#include "epochfs/fs/filesystem.h"
#include "epochfs/fs/session.h"
#include "epochfs/governor/sampler.h"
#include "epochfs/store/cache_front.h"
#include "epochfs/store/held_dirs.h"
#include "epochfs/store/lower.h"
#include "epochfs/tier/disk_tier.h"
#include "disk_tier_setup.h"
#include "background.h"
#include "nested_mount.h"
#include "job_sink.h"
#include "memory_governor.h"
#include "need_watch.h"
#include "operator_io.h"
#include "mount_point.h"
#include "orphan_reaper.h"
#include "policy_trace.h"
#include "prefetcher.h"
#include "spill_area.h"
#include "stats_json.h"
#include "unmount_watcher.h"

namespace epochfs {
namespace {

std::unique_ptr<cache::Policy> MakePolicy(const Config& cfg, uint64_t budget) {
  cache::PolicyParams p;
  p.kind = cfg.cache.policy;
  p.budget_bytes = budget;
  p.future.implied_reads = cfg.fuse.no_open;  // the kernel's hits never reach the policy
  p.future.request_bytes = cfg.cache.request_bytes;
  p.future.order_jobs = cfg.lower.read_slots != 0;
  p.future.weigh_hits = cfg.cache.weigh_hits;
  p.epoch.gain_max = cfg.policy.gain_max;
  p.epoch.warmup_batches = cfg.warmup.batches;
  p.epoch.seed = static_cast<uint64_t>(::getpid());
  // Config accepts only the daemon's policies (lru, epoch, future), which
  // need no oracle: this cannot fail.
  return std::move(cache::MakePolicy(p)).value();
}

}  // namespace

uint64_t AutoBudget() {
  const Result<governor::MemoryReading> r = governor::Sampler().Read();
  const uint64_t avail = r.ok() ? r.value().available : 0;
  return std::max<uint64_t>(avail / 2, 64ull << 20);
}

// Descriptors: the daemon holds one per open spill file and per streamed
// dataset file (bounded per user by limits.*); the soft limit goes up to the
// hard one so that those bounds, not the default 1024, decide.
static void RaiseDescriptorLimit() {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  const rlim_t before = rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &rl) == 0) {
    log::Debug("descriptor limit raised from " + std::to_string(before) + " to " +
               std::to_string(rl.rlim_cur));
  }
}

// FUSE worker threads: fuse.threads, or two per core and at least 4, at
// least 16 with lower.read_slots (a load waiting its turn holds a thread).
static unsigned FuseThreads(const Config& cfg) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (cfg.fuse.threads != 0) return cfg.fuse.threads;
  return std::max(cfg.lower.read_slots != 0 ? 16u : 4u, 2 * cores);
}

// Prefetch loads in flight at most: only the "future" policy gives hints.
static uint32_t PrefetchLoads(const Config& c) {
  return c.cache.policy == PolicyKind::kFuture ? c.cache.prefetch : 0;
}

namespace {

// One mount: every part the daemon builds, in the order it builds them.
// Members are destroyed in reverse, so each part goes after the parts that
// use it (the session before the filesystems it serves, the cache before
// the lower it reads). Not movable: the parts hold references to each other.
class Mount {
 public:
  explicit Mount(const DaemonArgs& in) : args_(in) {}
  Mount(const Mount&) = delete;
  Mount& operator=(const Mount&) = delete;

  Status Check();
  Status Build();
  Status MountSessions();
  Status Start();
  Status Serve();

 private:
  const Config& cfg() const { return args_.config; }
  Status OpenLower();
  void ChooseBudget();
  Status MakeCache();
  Status OpenDiskTier();
  void MakePrefetcher();
  Status MakeFilesystems();
  void StartProbe();
  std::string Stats() const {
    return StatsJson(args_.mountpoint, *cache_, *lower_, *known_, spill_.get(), governor_.get(),
                     fixed_warnings_);
  }
  // A start that fails after the fork: logged, and told to the waiting parent.
  Status Failed(Status s) {
    log::Error(s.message());
    bg_.Failed(s.message());
    return s;
  }

  DaemonArgs args_;
  unsigned max_read_ = 0;
  std::unique_ptr<store::Lower> lower_;
  std::unique_ptr<store::KnownLower> known_;  // what the sessions know of LOWER
  uint64_t budget_ = 0;
  std::unique_ptr<MemoryGovernor> governor_;  // cache.memory = "auto"
  std::vector<std::string> fixed_warnings_;
  std::unique_ptr<tier::DiskTier> disk_;  // cache.disk_path; outlives the cache that reads it
  std::unique_ptr<store::CacheFront> cache_;
  std::unique_ptr<SpillArea> spill_;
  std::unique_ptr<PolicyJobSink> sink_;
  std::unique_ptr<Prefetcher> prefetcher_;
  std::unique_ptr<control::JobRegistry> registry_;
  std::unique_ptr<control::ControlTree> control_;
  std::unique_ptr<RegistryAttributor> attributor_;
  std::unique_ptr<fs::Filesystem> filesystem_;
  std::unique_ptr<fs::Filesystem> control_fs_;
  std::unique_ptr<fs::Filesystem> spill_fs_;
  fs::MountOptions mo_;
  std::unique_ptr<fs::Session> session_;
  bool background_ = false;
  OperatorIo io_;  // log targets, metrics.listen, the service manager
  // In the background, the command's exit status waits for ProbeMount.
  Background bg_;
  std::unique_ptr<NeedWatch> need_watch_;
  std::unique_ptr<OrphanReaper> reaper_;
  std::thread probe_;
  // Set by `probe_`, read after joining it: the nested sessions, and why one
  // could not be mounted. The control session is mounted last, so a readable
  // `.epochfs/version` means every session serves (what a foreground mount's
  // caller, the tests among them, waits for).
  std::vector<std::unique_ptr<NestedMount>> nested_;
  Status nested_status_ = Status::Ok();
};

// The paths, the mountpoint and the options, before anything is built.
Status Mount::Check() {
  if (Status s = CanonicalPaths(&args_.lower, &args_.mountpoint); !s.ok()) return s;
  struct stat mst;
  if (::stat(args_.mountpoint.c_str(), &mst) != 0) {
    return ErrnoStatus(Code::kNotFound, errno, "mountpoint " + args_.mountpoint);
  }
  if (!S_ISDIR(mst.st_mode)) return InvalidArgument("mountpoint " + args_.mountpoint + ": not a directory");
  if (Status s = CheckMountPoint(args_.lower, args_.mountpoint, ReadMountInfo()); !s.ok()) return s;
  if (Status s = CheckNoOpen(cfg()); !s.ok()) return s;
  // A log.file or metrics.listen that cannot be had fails the mount here.
  if (Status s = io_.Prepare(cfg(), args_.lower, args_.mountpoint); !s.ok()) return s;
  // fuse.one_copy hands cached objects over to the kernel's page cache and
  // frees the daemon's copy (CacheFront::HandOver): objects from 32 KiB up
  // get pages of their own (mmap), which go back to the system when freed
  // (from the heap, freed memory mostly stays in the process).
  if (cfg().fuse.one_copy && cfg().fuse.kernel_cache) ::mallopt(M_MMAP_THRESHOLD, 32 * 1024);
  Result<unsigned> max_read = MaxReadOption(args_.fuse_opts);
  if (!max_read.ok()) return max_read.status();
  max_read_ = max_read.value();
  return Status::Ok();
}

// The parts, from the lower reader to the filesystems; nothing runs yet.
Status Mount::Build() {
  if (Status s = OpenLower(); !s.ok()) return s;
  ChooseBudget();
  if (Status s = MakeCache(); !s.ok()) return s;
  // The spill area: checked now (a bad spill.path fails the mount), opened
  // after daemonizing (its threads would not survive the fork).
  if (!cfg().spill.path.empty()) {
    spill_ = std::make_unique<SpillArea>(cfg().spill, cfg().limits.spill_bytes_per_user,
                                         cfg().limits.spill_entries_per_user);
    if (Status s = spill_->Check(); !s.ok()) return s;
  }
  sink_ = std::make_unique<PolicyJobSink>(*lower_, *cache_);
  MakePrefetcher();
  control::JobRegistryOptions registry_opts;
  registry_opts.max_jobs_per_user = cfg().limits.jobs_per_user;
  registry_opts.max_samples_per_user = cfg().limits.samples_per_user;
  registry_ = std::make_unique<control::JobRegistry>(*sink_, control::MakeProcReader(),
                                                     registry_opts);
  control_ = std::make_unique<control::ControlTree>(
      *registry_, *sink_,
      [this] {
        return Stats();
      },
      spill_.get(), cfg().limits.spill_schedule_steps);
  attributor_ = std::make_unique<RegistryAttributor>(*registry_);
  return MakeFilesystems();
}

Status Mount::OpenLower() {
  store::LowerGateOptions gate;
  gate.timeout = std::chrono::milliseconds(static_cast<int64_t>(cfg().lower.timeout * 1000.0));
  gate.workers = cfg().lower.workers;
  gate.prefetch_inline = true;  // on the prefetch threads, never the readers' (lower_gate.h)
  // Metadata calls run on the FUSE thread itself (no hand-off) for at most
  // half the FUSE threads at once: were LOWER to hang, the other half serve
  // the cache and the control files while the watchdog answers for the stuck.
  gate.max_inline = FuseThreads(cfg()) / 2;
  // Under "immutable" files are opened relative to held directory descriptors.
  const bool immutable = cfg().cache.consistency == Consistency::kImmutable;
  auto lower = store::Lower::Open(args_.lower, gate, immutable ? store::kHeldDirs : 0);
  if (!lower.ok()) return Status(lower.status().code(), "dataset " + lower.status().message());
  lower_ = std::move(lower).value();
  known_ = std::make_unique<store::KnownLower>(*lower_, fs::KnownLowerOptionsOf(cfg()));
  return Status::Ok();
}

// cache.memory: the governor's first budget ("auto"), else the fixed one.
void Mount::ChooseBudget() {
  budget_ = cfg().cache.memory_bytes;
  if (cfg().cache.memory_auto) {
    governor_ = std::make_unique<MemoryGovernor>(cfg());
    Result<uint64_t> first = governor_->Initial();
    if (first.ok()) {
      budget_ = first.value();
    } else {
      log::Warn("memory governor off: " + first.status().message());
      governor_.reset();
      budget_ = AutoBudget();
    }
    return;
  }
  // A fixed budget the machine cannot hold is allowed (memory may be added
  // to a VM, a cgroup limit raised) but said, once in the log and always in
  // stats.
  const Result<governor::MemoryReading> r = governor::Sampler().Read();
  const uint64_t room = r.ok() ? r.value().total : 0;
  if (room != 0 && budget_ > room) {
    fixed_warnings_.push_back(
        "cache.memory (" + std::to_string(budget_) + " bytes) is more than the " +
        (r.value().cgroup_limited ? "memory cgroup's limit" : "machine's memory") + " (" +
        std::to_string(room) +
        " bytes): the cache will be swapped out or OOM-killed; use a smaller budget or "
        "cache.memory = \"auto\"");
    log::Warn(fixed_warnings_.back());
  }
}

Status Mount::MakeCache() {
  std::unique_ptr<cache::Policy> policy = MakePolicy(cfg(), budget_);
  if (!cfg().trace.file.empty()) {  // before daemonizing: a bad path fails the mount
    auto recorded = RecordPolicyTrace(cfg().trace.file, cfg().trace.max_bytes, std::move(policy),
                                      {cfg().cache.request_bytes, cfg().cache.weigh_hits});
    if (!recorded.ok()) return recorded.status();
    policy = std::move(recorded).value();
  }
  cache_ = std::make_unique<store::CacheFront>(*lower_, std::move(policy), budget_);
  store::ReadSlotsOptions slots;
  slots.slots = cfg().lower.read_slots;
  slots.max_waiting = FuseThreads(cfg()) > 2 ? FuseThreads(cfg()) - 2 : 0;
  cache_->SetReadSlots(slots);
  cache_->SetRequestBytes(cfg().cache.request_bytes, cfg().cache.request_bytes_auto);
  return Status::Ok();
}

// The disk tier, after daemonizing: checked, locked and its index read (a bad
// directory or one in use fails the mount). A start not answered within
// cache.disk_timeout (its thread may be left behind) leaves the mount
// RAM-only, the tier shown failed (epochfs(8)).
Status Mount::OpenDiskTier() {
  if (cfg().cache.disk_path.empty()) return Status::Ok();
  auto disk = OpenDiskTierOf(cfg(), spill_.get());
  if (disk.ok()) {
    disk_ = std::move(disk).value();
  } else if (disk.status().code() == Code::kTimedOut) {
    disk_ = FailedDiskTierOf(cfg(), disk.status().message());
  } else {
    return disk.status();
  }
  if (Status s = disk_->Start(); !s.ok()) {
    log::Warn("disk tier " + cfg().cache.disk_path + " off: " + s.message());
    return Status::Ok();
  }
  cache_->SetSecondTier(disk_.get());
  return Status::Ok();
}

// Prefetch, on the gate's prefetch lane (OpenLower). It brings the attributes of the files it loads,
// and of the next ones it will not (stat-ahead): under "immutable" their lookups ask LOWER nothing.
void Mount::MakePrefetcher() {
  const uint32_t prefetch = PrefetchLoads(cfg());
  if (prefetch == 0) return;
  PolicyJobSink& sink = *sink_;
  prefetcher_ = std::make_unique<Prefetcher>(*cache_, prefetch,
      [&sink](cache::JobId job, uint32_t sample) { return sink.SampleFileOf(job, sample); });
  Prefetcher* pf = prefetcher_.get();
  sink.SetSamplesListener([pf] { pf->Arm(); });
  pf->SetUnreadableListener(
      [&sink](const cache::PrefetchHint& h, const std::string& rel, const Status& why) {
        sink.SampleUnreadable(h.job, h.sample, rel, why);
      });
  cache_->SetActivityListener([pf] { pf->Kick(); });
  cache_->SetPrefetchAttrListener([known = known_.get()](const std::string& rel,
                                                         const struct stat& st) { known->Learn(rel, st); });
  if (fs::KnownLowerOptionsOf(cfg()).remember) {  // kept only under "immutable": stat'ed only then
    pf->SetStatAhead([known = known_.get()](const SampleFile& f) { known->Ahead(f.rel); });
  }
}

Status Mount::MakeFilesystems() {
  fs::FsParts parts{&cfg(), lower_.get(), cache_.get(), control_.get(), attributor_.get(),
                    spill_ != nullptr, max_read_};
  if (cfg().fuse.no_open) parts.role = fs::Role::kDataset;
  parts.known = known_.get();
  auto filesystem = fs::Filesystem::Create(parts);
  if (!filesystem.ok()) return filesystem.status();
  filesystem_ = std::move(filesystem).value();
  // fuse.no_open: the control directory and the spill area are sessions of
  // their own, mounted on the dataset session's `.epochfs` and `.spill` once
  // that one serves (nested_mount.h).
  for (fs::Role role : {fs::Role::kControl, fs::Role::kSpill}) {
    if (!cfg().fuse.no_open || (role == fs::Role::kSpill && !spill_)) continue;
    fs::FsParts nparts = parts;
    nparts.role = role;
    nparts.max_read = 0;
    auto made = fs::Filesystem::Create(nparts);
    if (!made.ok()) return made.status();
    (role == fs::Role::kControl ? control_fs_ : spill_fs_) = std::move(made).value();
  }
  return Status::Ok();
}

// The dataset's session (the nested ones follow in StartProbe).
Status Mount::MountSessions() {
  mo_.mountpoint = args_.mountpoint;
  mo_.fsname = args_.lower;
  // auto_unmount is epochfs' own (unmount_watcher.h), not libfuse's.
  bool auto_unmount = false;
  for (const std::string& o : args_.fuse_opts) {
    if (o == "auto_unmount") {
      auto_unmount = true;
    } else {
      mo_.fuse_opts.push_back(o);
    }
  }
  if (cfg().fuse.allow_other) mo_.fuse_opts.push_back("allow_other");
  mo_.debug = args_.debug;
  mo_.threads = FuseThreads(cfg());
  auto session = fs::Session::Mount(*filesystem_, mo_);
  if (!session.ok()) return session.status();
  session_ = std::move(session).value();
  if (auto_unmount) {
    if (Status s = StartUnmountWatcher(args_.mountpoint); !s.ok()) return s;
  }
  return Status::Ok();
}

// Daemonizes (unless in the foreground), then opens the spill area and starts
// the threads: they start after Background::Start's fork.
Status Mount::Start() {
  background_ = !args_.foreground && !args_.debug;
  if (background_) {
    // In the background stderr is gone: syslog, or the journal under systemd.
    io_.WarnIfLost();
    if (Status s = Background::Start(&bg_); !s.ok()) return s;
    if (Status s = io_.Detach(); !s.ok()) return Failed(s);
  }
  // In the foreground the caller prints the error (one line).
  if (Status s = OpenDiskTier(); !s.ok()) return background_ ? Failed(s) : s;
  log::Info("mounted " + args_.lower + " at " + args_.mountpoint + " (budget " +
            std::to_string(budget_) + " bytes, policy " + cache_->policy_name() +
            "); log lines go to " + io_.LogTargets());
  if (spill_) {
    if (Status s = spill_->Open(); !s.ok()) return Failed(s);
    (spill_fs_ ? *spill_fs_ : *filesystem_).SetSpillStore(spill_->store());
  }
  if (Status s = io_.StartHttp([this] { return Stats(); }); !s.ok()) return Failed(s);
  need_watch_ = std::make_unique<NeedWatch>(*cache_);
  // A removed job directory is the control session's entry when there is one.
  fs::Filesystem& fsys = control_fs_ ? *control_fs_ : *filesystem_;
  NeedWatch& need_watch = *need_watch_;
  reaper_ = std::make_unique<OrphanReaper>(
      *registry_, uint64_t{cfg().jobs.orphan_grace} * 1'000'000'000,
      [&fsys, this](const std::string& name) {
        fsys.ControlEntryRemoved("jobs/" + name);
        if (spill_) spill_->DropJob(name);
      },
      [&need_watch] { need_watch.Tick(); });
  reaper_->Start();
  lower_->StartGate();
  if (prefetcher_) prefetcher_->Start();
  if (governor_) {
    governor_->Attach(cache_.get());
    governor_->Start();
  }
  StartProbe();
  return Status::Ok();
}

// Beside the session loop: mounts the nested sessions, then (in the
// background, or for a service manager) reads the version file through the
// kernel and reports: to the waiting parent, and READY=1 to systemd.
void Mount::StartProbe() {
  if (!background_ && !control_fs_ && !io_.notify()) return;
  fs::MountOptions nmo = mo_;
  nmo.threads = std::max(2u, mo_.threads / 2);
  std::erase_if(nmo.fuse_opts, [](const std::string& o) { return o.rfind("max_read=", 0) == 0; });
  probe_ = std::thread([this, nmo, probe = background_ || io_.notify(), mnt = args_.mountpoint] {
    Status p = Status::Ok();
    const struct {
      fs::Filesystem* fs;
      const char* dir;
      const char* name;
      const char* what;
    } sessions[] = {{spill_fs_.get(), fs::kSpillDirName, "spill", "spill area"},
                    {control_fs_.get(), fs::kControlDirName, "control", "control directory"}};
    for (const auto& n : sessions) {
      if (n.fs == nullptr || !p.ok()) continue;
      fs::MountOptions o = nmo;
      o.mountpoint = mnt + "/" + n.dir;
      auto m = NestedMount::Start(*n.fs, o, n.name);
      if (m.ok()) {
        nested_.push_back(std::move(m).value());
      } else {
        p = Status(m.status().code(), std::string(n.what) + ": " + m.status().message());
        nested_status_ = p;
      }
    }
    if (p.ok() && probe) p = ProbeMount(mnt);
    if (p.ok()) {
      bg_.Ready();
      io_.Ready(args_.lower, mnt);
    } else {
      bg_.Failed(p.message());
      log::Error(p.message());
      if (control_fs_) ::kill(::getpid(), SIGTERM);  // a session missing: end the dataset's loop
    }
  });
}

// Runs the session loop until unmounted or signalled, then stops the parts
// in reverse: the threads, the sessions, the spill area last.
Status Mount::Serve() {
  Status s = session_->Run();
  if (!s.ok()) bg_.Failed("cannot mount " + args_.mountpoint + ": " + s.message());
  io_.Stopping();
  io_.StopHttp();
  if (governor_) governor_->Stop();
  if (prefetcher_) prefetcher_->Stop();
  reaper_->Stop();
  session_.reset();  // unmount before the parts it serves go away
  if (probe_.joinable()) probe_.join();
  if (!nested_status_.ok()) s = nested_status_;
  // After the dataset session: its unmount detached these too. The spill
  // session's last requests are served before the store closes.
  while (!nested_.empty()) nested_.pop_back();
  if (spill_) spill_->Close();  // writes staged spill data back
  // Queued copies land, the index is compacted; a writer stuck on a disk
  // that does not answer is left to the process's exit, with its tier.
  if (disk_ && !disk_->Stop()) {
    // Held from a static (volatile: the store is not optimized away), not
    // lost: a leak checker at exit sees it owned.
    [[maybe_unused]] static tier::DiskTier* volatile left_behind = nullptr;
    left_behind = disk_.release();
  }
  log::Info("unmounted " + args_.mountpoint);
  return s;
}

}  // namespace

Status RunDaemon(const DaemonArgs& in) {
  RaiseDescriptorLimit();
  Mount mount(in);
  if (Status s = mount.Check(); !s.ok()) return s;
  if (Status s = mount.Build(); !s.ok()) return s;
  if (Status s = mount.MountSessions(); !s.ok()) return s;
  if (Status s = mount.Start(); !s.ok()) return s;
  return mount.Serve();
}

}  // namespace epochfs
