#include "epochfs/daemon/daemon.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "epochfs/cache/cache_need.h"
#include "epochfs/cache/policy.h"
#include "epochfs/cache/policy_factory.h"
#include "epochfs/common/log.h"
#include "epochfs/control/control_tree.h"
#include "epochfs/fs/filesystem.h"
#include "epochfs/fs/session.h"
#include "epochfs/store/cache_front.h"
#include "epochfs/store/lower.h"
#include "background.h"
#include "nested_mount.h"
#include "job_sink.h"
#include "memory_governor.h"
#include "mount_point.h"
#include "orphan_reaper.h"
#include "policy_trace.h"
#include "prefetcher.h"
#include "spill_area.h"
#include "unmount_watcher.h"

namespace epochfs {
namespace {

// A "Key: N kB" line of /proc/meminfo, in bytes; 0 when absent.
uint64_t ReadMemInfo(const char* format) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), format, &kb) == 1) return kb * 1024;
  }
  return 0;
}
uint64_t ReadMemAvailable() { return ReadMemInfo("MemAvailable: %llu kB"); }

uint64_t ReadCgroupLimit() {
  for (const char* p : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(p);
    std::string v;
    if (in >> v && v != "max") {
      try {
        return std::stoull(v);
      } catch (...) {
      }
    }
  }
  return 0;
}

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

std::string StatsJson(store::CacheFront& cf, const store::Lower& lower, const SpillArea* spill,
                      const MemoryGovernor* governor, const std::vector<std::string>& fixed) {
  const store::CacheCounters c = cf.counters();
  nlohmann::json j;
  j["version"] = EPOCHFS_VERSION;
  j["policy"] = cf.policy_name();
  j["budget"] = cf.ram().budget();
  j["used"] = cf.ram().used();
  j["objects"] = cf.ram().objects();
  j["hits"] = c.hits;
  j["misses"] = c.misses;
  j["coalesced"] = c.coalesced;
  j["bytes_read_lower"] = c.bytes_read_lower;
  j["admissions"] = c.admissions;
  j["evictions"] = c.evictions;
  j["refused"] = c.refused;
  j["invalidations"] = c.invalidations;
  j["lower_errors"] = c.lower_errors;
  j["streamed_opens"] = c.streamed_opens;
  j["streamed_bytes"] = c.streamed_bytes;
  j["prefetched"] = c.prefetched;
  j["prefetch_bytes"] = c.prefetch_bytes;
  j["prefetch_hits"] = c.prefetch_hits;
  j["prefetch_wasted"] = c.prefetch_wasted;
  j["handovers"] = c.handovers;
  j["refills"] = c.refills;
  const store::LowerGateCounters g = lower.gate_counters();
  j["lower_timeouts"] = g.timeouts;
  j["lower_interrupts"] = g.interrupts;
  j["lower_stuck"] = g.stuck;
  j["lower_in_flight"] = g.in_flight;
  j["lower_calls"] = g.calls;
  j["lower_inline_calls"] = g.inline_calls;
  const store::ReadSlotsCounters rs = cf.read_slots_counters();
  j["read_waits"] = rs.waits;
  j["read_wait_ms"] = rs.wait_ns / 1'000'000;
  j["read_aged"] = rs.aged;
  j["read_waiting"] = rs.waiting;
  j["max_object_bytes"] = cf.max_object_bytes();
  j["request_bytes"] = cf.request_bytes();
  // The cached objects by where their bytes are: the daemon's RAM, or the
  // kernel's page cache (handed over, fuse.one_copy); `objects` and `used`
  // count both.
  const uint64_t k_objects = cf.ram().handed_objects(), k_bytes = cf.ram().handed_bytes();
  const uint64_t objects = cf.ram().objects(), used = cf.ram().used();
  j["tiers"]["ram"] = {{"objects", objects - std::min(objects, k_objects)},
                       {"bytes", used - std::min(used, k_bytes)}};
  j["tiers"]["kernel"] = {{"objects", k_objects}, {"bytes", k_bytes}};
  nlohmann::json jobs = nlohmann::json::array();
  nlohmann::json warnings = nlohmann::json::array();
  for (const std::string& w : fixed) warnings.push_back(w);
  if (c.streamed_opens != 0) {
    warnings.push_back(std::to_string(c.streamed_opens) +
                       " open(s) of files larger than max_object_bytes (" +
                       std::to_string(cf.max_object_bytes()) +
                       ": a quarter of cache.memory, at most 1 GiB) read them from LOWER "
                       "uncached (streamed_bytes): cache.block_size = 0; a block size "
                       "caches them in blocks");
  }
  cf.ReadPolicy([&](const cache::Policy& p) {
    j["pool"] = p.pool_bytes();
    j["shared"] = p.shared_bytes();
    j["resident"] = p.resident_bytes();
    const cache::CacheNeed need = cache::SumCacheNeed(p);
    j["need_total_bytes"] = need.total_bytes;
    if (need.over) warnings.push_back(need.Warning());
    for (const cache::JobSnapshot& s : p.Jobs()) {
      jobs.push_back({{"name", s.name},
                      {"id", s.id},
                      {"state", s.started ? cache::JobStateName(s.state) : "configured"},
                      {"epoch", s.epoch},
                      {"batch", s.batch},
                      {"cur_bytes", s.cur_bytes},
                      {"next_bytes", s.next_bytes},
                      {"tail_bytes", s.tail_bytes},
                      {"granted_unused_bytes", s.granted_unused_bytes},
                      {"hits", s.current.hits},
                      {"misses", s.current.misses},
                      {"cache_need_bytes", s.need_measured ? nlohmann::json(s.need_bytes)
                                                           : nlohmann::json(nullptr)}});
    }
  });
  j["jobs"] = jobs;
  if (spill != nullptr && spill->store() != nullptr) {
    const spill::SpillStats st = spill->store()->stats();
    j["tiers"]["spill"] = {{"files", st.files},
                           {"logical_bytes", st.logical_bytes},
                           {"stored_bytes", st.stored_bytes},
                           {"staging_bytes", st.staging_bytes},
                           {"dirty_bytes", st.dirty_bytes},
                           {"chunks_compressed", st.chunks_compressed},
                           {"chunks_raw", st.chunks_raw},
                           {"ssd_read_bytes", st.ssd_read_bytes},
                           {"ssd_write_bytes", st.ssd_write_bytes},
                           {"checksum_errors", st.checksum_errors}};
  }
  j["warnings"] = warnings;
  if (governor != nullptr) j["governor"] = governor->StatsJson();
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Logs one warning each time Σ jobs' cache need goes over the budget (and a
// note when it falls back under). Called from the reaper thread only.
class NeedWatch {
 public:
  explicit NeedWatch(store::CacheFront& cf) : cf_(cf) {}
  void Tick() {
    cache::CacheNeed need;
    cf_.ReadPolicy([&](const cache::Policy& p) { need = cache::SumCacheNeed(p); });
    if (need.over && !over_) log::Warn(need.Warning());
    if (!need.over && over_) {
      log::Info("cache need " + std::to_string(need.total_bytes) + " bytes fits the budget again");
    }
    over_ = need.over;
  }

 private:
  store::CacheFront& cf_;
  bool over_ = false;
};

}  // namespace

uint64_t AutoBudget() {
  uint64_t avail = ReadMemAvailable();
  uint64_t limit = ReadCgroupLimit();
  if (limit != 0 && (avail == 0 || limit < avail)) avail = limit;
  return std::max<uint64_t>(avail / 2, 64ull << 20);
}

// The value of `-o max_read=BYTES` among the FUSE options (0 when absent).
Result<unsigned> MaxReadOption(const std::vector<std::string>& fuse_opts) {
  unsigned value = 0;
  for (const std::string& o : fuse_opts) {
    if (o.rfind("max_read=", 0) != 0) continue;
    const std::string v = o.substr(9);
    unsigned long long n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 4096 || n > (1u << 30)) {
      return InvalidArgument("-o " + o + ": max_read is a byte count from 4096 to 1073741824");
    }
    value = static_cast<unsigned>(n);
  }
  return value;
}

// Reads MOUNTPOINT/.epochfs/version through the kernel: the mount is in place
// and INIT was accepted. Runs beside the session loop.
Status ProbeMount(const std::string& mountpoint) {
  const std::string path = mountpoint + "/.epochfs/version";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("mount at " + mountpoint + " does not answer: " + std::strerror(errno));
  char buf[64];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  const int e = errno;
  ::close(fd);
  if (n <= 0) {
    return IoError("mount at " + mountpoint + " does not answer: " +
                   (n < 0 ? std::strerror(e) : "empty version file"));
  }
  return Status::Ok();
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

// fuse.no_open: what it needs (nested_mount.h) and cannot combine with.
static Status CheckNoOpen(const Config& cfg) {
  if (!cfg.fuse.no_open) return Status::Ok();
  const std::string k = "fuse.no_open = true ";
  // The control directory (and spill area) are mounts inside the mount: by
  // the daemon itself as root, else by the set-uid fusermount3, which the
  // kernel lets into a FUSE mount only with allow_other.
  if (::geteuid() != 0 && !cfg.fuse.allow_other) {
    return NotPermitted(k + "needs root, or fuse.allow_other = true (user_allow_other in /etc/fuse.conf): the control directory is a mount of its own inside the mount, which fusermount3 mounts for a user only on a mount it may enter");
  }
  if (!cfg.fuse.kernel_cache) {
    return InvalidArgument(k + "needs fuse.kernel_cache = true (the kernel's pages are the hot path)");
  }
  return Status::Ok();
}

Status RunDaemon(const DaemonArgs& in) {
  RaiseDescriptorLimit();
  DaemonArgs args = in;
  const Config& cfg = args.config;
  if (Status s = CanonicalPaths(&args.lower, &args.mountpoint); !s.ok()) return s;
  struct stat mst;
  if (::stat(args.mountpoint.c_str(), &mst) != 0) {
    return NotFound("mountpoint " + args.mountpoint + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(mst.st_mode)) return InvalidArgument("mountpoint " + args.mountpoint + ": not a directory");
  if (Status s = CheckMountPoint(args.lower, args.mountpoint, ReadMountInfo()); !s.ok()) return s;
  if (Status s = CheckNoOpen(cfg); !s.ok()) return s;
  // fuse.one_copy hands cached objects over to the kernel's page cache and
  // frees the daemon's copy (CacheFront::HandOver): objects from 32 KiB up
  // get pages of their own (mmap), which go back to the system when freed
  // (from the heap, freed memory mostly stays in the process).
  if (cfg.fuse.one_copy && cfg.fuse.kernel_cache) ::mallopt(M_MMAP_THRESHOLD, 32 * 1024);
  Result<unsigned> max_read = MaxReadOption(args.fuse_opts);
  if (!max_read.ok()) return max_read.status();
  store::LowerGateOptions gate;
  gate.timeout = std::chrono::milliseconds(static_cast<int64_t>(cfg.lower.timeout * 1000.0));
  gate.workers = cfg.lower.workers;
  // Metadata calls run on the FUSE thread itself (no hand-off) for at most
  // half the FUSE threads at once: were LOWER to hang, the other half serve
  // the cache and the control files while the watchdog answers for the stuck.
  gate.max_inline = FuseThreads(cfg) / 2;
  auto lower = store::Lower::Open(args.lower, gate);
  if (!lower.ok()) return Status(lower.status().code(), "dataset " + lower.status().message());

  uint64_t budget = cfg.cache.memory_bytes;
  std::unique_ptr<MemoryGovernor> governor;  // cache.memory = "auto"
  if (cfg.cache.memory_auto) {
    governor = std::make_unique<MemoryGovernor>(cfg);
    Result<uint64_t> first = governor->Initial();
    if (first.ok()) {
      budget = first.value();
    } else {
      log::Warn("memory governor off: " + first.status().message());
      governor.reset();
      budget = AutoBudget();
    }
  }
  // A fixed budget the machine cannot hold is allowed (memory may be added
  // to a VM, a cgroup limit raised) but said, once in the log and always in
  // stats.
  std::vector<std::string> fixed_warnings;
  if (!cfg.cache.memory_auto) {
    const uint64_t total = ReadMemInfo("MemTotal: %llu kB");
    const uint64_t limit = ReadCgroupLimit();
    const uint64_t room = limit != 0 && (total == 0 || limit < total) ? limit : total;
    if (room != 0 && budget > room) {
      fixed_warnings.push_back(
          "cache.memory (" + std::to_string(budget) + " bytes) is more than the " +
          (room == limit ? "memory cgroup's limit" : "machine's memory") + " (" +
          std::to_string(room) +
          " bytes): the cache will be swapped out or OOM-killed; use a smaller budget or "
          "cache.memory = \"auto\"");
      log::Warn(fixed_warnings.back());
    }
  }
  std::unique_ptr<cache::Policy> policy = MakePolicy(cfg, budget);
  if (!cfg.trace.file.empty()) {  // before daemonizing: a bad path fails the mount
    auto recorded = RecordPolicyTrace(cfg.trace.file, std::move(policy),
                                      {cfg.cache.request_bytes, cfg.cache.weigh_hits});
    if (!recorded.ok()) return recorded.status();
    policy = std::move(recorded).value();
  }
  store::CacheFront cache(*lower.value(), std::move(policy), budget);
  store::ReadSlotsOptions slots;
  slots.slots = cfg.lower.read_slots;
  slots.max_waiting = FuseThreads(cfg) > 2 ? FuseThreads(cfg) - 2 : 0;
  cache.SetReadSlots(slots);
  cache.SetRequestBytes(cfg.cache.request_bytes, cfg.cache.request_bytes_auto);
  // The spill area: checked now (a bad spill.path fails the mount), opened
  // after daemonizing (its threads would not survive the fork).
  std::unique_ptr<SpillArea> spill;
  if (!cfg.spill.path.empty()) {
    spill = std::make_unique<SpillArea>(cfg.spill, cfg.limits.spill_bytes_per_user);
    if (Status s = spill->Check(); !s.ok()) return s;
  }
  PolicyJobSink sink(*lower.value(), cache);
  // Prefetch: only a policy with a declared future gives hints. Readers keep
  // at least one LOWER worker of their own (lower.workers; 0 timeout: no
  // workers, the calls run on the caller's thread).
  uint32_t prefetch = cfg.cache.policy == PolicyKind::kFuture ? cfg.cache.prefetch : 0;
  if (prefetch != 0 && cfg.lower.timeout > 0 && prefetch >= cfg.lower.workers) {
    prefetch = cfg.lower.workers - 1;
    log::Warn("cache.prefetch " + std::to_string(cfg.cache.prefetch) + " lowered to " +
              std::to_string(prefetch) + ": readers keep one of the " +
              std::to_string(cfg.lower.workers) + " lower.workers");
  }
  std::unique_ptr<Prefetcher> prefetcher;
  if (prefetch != 0) {
    prefetcher = std::make_unique<Prefetcher>(
        cache, prefetch, [&sink](cache::JobId job, uint32_t sample) { return sink.PathOf(job, sample); });
    Prefetcher* pf = prefetcher.get();
    sink.SetSamplesListener([pf] { pf->Arm(); });
    pf->SetUnreadableListener(
        [&sink](const cache::PrefetchHint& h, const std::string& rel, const Status& why) {
          sink.SampleUnreadable(h.job, h.sample, rel, why);
        });
    cache.SetActivityListener([pf] { pf->Kick(); });
  }
  control::JobRegistryOptions registry_opts;
  registry_opts.max_jobs_per_user = cfg.limits.jobs_per_user;
  registry_opts.max_samples_per_user = cfg.limits.samples_per_user;
  control::JobRegistry registry(sink, control::MakeProcReader(), registry_opts);
  control::ControlTree control(
      registry, sink,
      [&cache, &spill, &governor, &fixed_warnings, &lower] {
        return StatsJson(cache, *lower.value(), spill.get(), governor.get(), fixed_warnings);
      },
      spill.get(), cfg.limits.spill_schedule_steps);
  RegistryAttributor attributor(registry);
  fs::FsParts parts{&cfg, lower.value().get(), &cache, &control, &attributor, spill != nullptr,
                    max_read.value()};
  if (cfg.fuse.no_open) parts.role = fs::Role::kDataset;
  auto filesystem = fs::Filesystem::Create(parts);
  if (!filesystem.ok()) return filesystem.status();
  // fuse.no_open: the control directory and the spill area are sessions of
  // their own, mounted on the dataset session's `.epochfs` and `.spill` once
  // that one serves (nested_mount.h).
  std::unique_ptr<fs::Filesystem> control_fs;
  std::unique_ptr<fs::Filesystem> spill_fs;
  for (fs::Role role : {fs::Role::kControl, fs::Role::kSpill}) {
    if (!cfg.fuse.no_open || (role == fs::Role::kSpill && !spill)) continue;
    fs::FsParts nparts = parts;
    nparts.role = role;
    nparts.max_read = 0;
    auto made = fs::Filesystem::Create(nparts);
    if (!made.ok()) return made.status();
    (role == fs::Role::kControl ? control_fs : spill_fs) = std::move(made).value();
  }

  fs::MountOptions mo;
  mo.mountpoint = args.mountpoint;
  mo.fsname = args.lower;
  // auto_unmount is epochfs' own (unmount_watcher.h), not libfuse's.
  bool auto_unmount = false;
  for (const std::string& o : args.fuse_opts) {
    if (o == "auto_unmount") {
      auto_unmount = true;
    } else {
      mo.fuse_opts.push_back(o);
    }
  }
  if (cfg.fuse.allow_other) mo.fuse_opts.push_back("allow_other");
  mo.debug = args.debug;
  mo.threads = FuseThreads(cfg);
  auto session = fs::Session::Mount(*filesystem.value(), mo);
  if (!session.ok()) return session.status();
  if (auto_unmount) {
    if (Status s = StartUnmountWatcher(args.mountpoint); !s.ok()) return s;
  }
  const bool background = !args.foreground && !args.debug;
  // In the background, the command's exit status waits for ProbeMount.
  Background bg;
  if (background) {
    if (Status s = Background::Start(&bg); !s.ok()) return s;
    log::UseSyslog("epochfs");
  }
  log::Info("mounted " + args.lower + " at " + args.mountpoint + " (budget " +
            std::to_string(budget) + " bytes, policy " + cache.policy_name() + ")");
  if (spill) {
    if (Status s = spill->Open(); !s.ok()) {
      log::Error(s.message());
      bg.Failed(s.message());
      return s;
    }
    (spill_fs ? *spill_fs : *filesystem.value()).SetSpillStore(spill->store());
  }
  NeedWatch need_watch(cache);
  // A removed job directory is the control session's entry when there is one.
  fs::Filesystem& fsys = control_fs ? *control_fs : *filesystem.value();
  OrphanReaper reaper(
      registry, uint64_t{cfg.jobs.orphan_grace} * 1'000'000'000,
      [&fsys, &spill](const std::string& name) {
        fsys.ControlEntryRemoved("jobs/" + name);
        if (spill) spill->DropJob(name);
      },
      [&need_watch] { need_watch.Tick(); });
  reaper.Start();  // threads start after Daemonize's fork
  lower.value()->StartGate();
  if (prefetcher) prefetcher->Start();
  if (governor) {
    governor->Attach(&cache);
    governor->Start();
  }
  std::thread probe;
  // Set by `probe`, read after joining it: the nested sessions, and why one
  // could not be mounted. The control session is mounted last, so a readable
  // `.epochfs/version` means every session serves (what a foreground mount's
  // caller, the tests among them, waits for).
  std::vector<std::unique_ptr<NestedMount>> nested;
  Status nested_status = Status::Ok();
  if (background || control_fs) {
    fs::MountOptions nmo = mo;
    nmo.threads = std::max(2u, mo.threads / 2);
    std::erase_if(nmo.fuse_opts, [](const std::string& o) { return o.rfind("max_read=", 0) == 0; });
    probe = std::thread([&bg, &control_fs, &spill_fs, &nested, &nested_status, nmo, background,
                         mnt = args.mountpoint] {
      Status p = Status::Ok();
      const struct {
        fs::Filesystem* fs;
        const char* dir;
        const char* name;
        const char* what;
      } sessions[] = {{spill_fs.get(), fs::kSpillDirName, "spill", "spill area"},
                      {control_fs.get(), fs::kControlDirName, "control", "control directory"}};
      for (const auto& n : sessions) {
        if (n.fs == nullptr || !p.ok()) continue;
        fs::MountOptions o = nmo;
        o.mountpoint = mnt + "/" + n.dir;
        auto m = NestedMount::Start(*n.fs, o, n.name);
        if (m.ok()) {
          nested.push_back(std::move(m).value());
        } else {
          p = Status(m.status().code(), std::string(n.what) + ": " + m.status().message());
          nested_status = p;
        }
      }
      if (p.ok() && background) p = ProbeMount(mnt);
      if (p.ok()) {
        bg.Ready();
      } else {
        bg.Failed(p.message());
        log::Error(p.message());
        if (control_fs) ::kill(::getpid(), SIGTERM);  // a session missing: end the dataset's loop
      }
    });
  }
  Status s = session.value()->Run();
  if (!s.ok()) bg.Failed("cannot mount " + args.mountpoint + ": " + s.message());
  if (governor) governor->Stop();
  if (prefetcher) prefetcher->Stop();
  reaper.Stop();
  session.value().reset();  // unmount before the parts it serves go away
  if (probe.joinable()) probe.join();
  if (!nested_status.ok()) s = nested_status;
  // After the dataset session: its unmount detached these too. The spill
  // session's last requests are served before the store closes.
  while (!nested.empty()) nested.pop_back();
  if (spill) spill->Close();  // writes staged spill data back
  log::Info("unmounted " + args.mountpoint);
  return s;
}

}  // namespace epochfs
