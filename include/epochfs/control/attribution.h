// Attribution of a reading process to a job, step (1) of control protocol v1:
// the job's registered pids and their descendants (forked DataLoader workers).
//
// ProcReader is the seam to /proc: MakeProcReader() reads /proc/<pid>/stat;
// tests inject a fake process table. Attributor walks the ppid chain of the
// reader up to a registered pid and caches pid → (start time, job), so that
//   - a worker whose parent exited (reparented to init) stays attributed;
//   - a reused pid (same number, different start time) is never taken for the
//     old process: every lookup re-reads the pid's start time and compares.
// pid 0 (FUSE's value for a caller outside the daemon's pid namespace) and
// unreadable pids are kNoJob; the caller then tries step (2) (the orders).
// Negative results are cached too; they are dropped whenever a pid is
// registered, and a job's entries are dropped when it ends.
//
// Thread safety: Attributor is thread-safe (one internal mutex, a leaf in the
// lock order: JobRegistry mutex → Attributor mutex → policy mutex). /proc is
// read without the mutex held. ProcReader implementations must be thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "epochfs/cache/policy.h"
#include "epochfs/common/status.h"

namespace epochfs::control {

using cache::JobId;
using cache::kNoJob;

// What attribution needs from /proc/<pid>/stat.
struct ProcStat {
  pid_t ppid = 0;
  uint64_t start_time = 0;  // field 22: clock ticks since boot
};

// Who a process belongs to (the Uid: line of /proc/<pid>/status).
struct ProcOwner {
  uid_t real = 0;
  uid_t effective = 0;
};

// Any owner: AddPids without the ownership check (root's writes, the daemon's own
// registrations of a request's caller).
inline constexpr uid_t kAnyOwner = static_cast<uid_t>(-1);

class ProcReader {
 public:
  virtual ~ProcReader() = default;
  // NotFound when the process does not exist (or vanished); IoError when its
  // stat cannot be read or parsed.
  virtual Result<ProcStat> Stat(pid_t pid) const = 0;
  // Same errors. (Not the owner of /proc/<pid>: a process that dropped
  // privileges is not dumpable, and its /proc files belong to root.)
  virtual Result<ProcOwner> Owner(pid_t pid) const = 0;
};

// Reads `<proc_root>/<pid>/stat` (proc_root "/proc" in the daemon).
std::unique_ptr<ProcReader> MakeProcReader(std::string proc_root = "/proc");

struct AttributorOptions {
  size_t cache_capacity = 65536;  // pid → (start time, job) entries, LRU
  int max_depth = 64;             // ancestors walked per lookup
};

class Attributor {
 public:
  explicit Attributor(std::unique_ptr<ProcReader> proc, AttributorOptions options = {});
  Attributor(const Attributor&) = delete;
  Attributor& operator=(const Attributor&) = delete;

  // Registers `pid` (a live process) for `job`. InvalidArgument when the pid
  // does not exist or is registered to another job; re-registering for the
  // same job is a no-op. A registered pid whose process has since exited (start
  // time changed) is replaced silently.
  Status AddPid(JobId job, pid_t pid);
  // All of `pids` or none of them (same rules as AddPid). With `owner` other
  // than kAnyOwner, every pid must also be a process whose real or effective
  // uid is `owner` (NotPermitted otherwise): a user registers only their own
  // processes.
  Status AddPids(JobId job, const std::vector<pid_t>& pids, uid_t owner = kAnyOwner);
  // Forgets the job's pids and every cached attribution to it.
  void RemoveJob(JobId job);
  // Forgets `job`'s registered pids whose process has exited (pid gone or
  // start time changed); the living stay. Reads /proc.
  void ForgetExited(JobId job);
  // Registered pids of `job`, ascending.
  std::vector<pid_t> Pids(JobId job) const;
  // How many of `job`'s registered processes are still running (same pid and
  // start time), and how many are registered at all. Reads /proc.
  struct Liveness {
    size_t registered = 0;
    size_t alive = 0;
  };
  Liveness Alive(JobId job) const;

  // Step (1): the job of `pid` (a registered pid or a descendant of one), or
  // kNoJob. Never fails.
  JobId Lookup(pid_t pid);

  size_t cache_size() const;

 private:
  struct Registered {
    uint64_t start_time;
    JobId job;
  };
  struct Cached {
    uint64_t start_time;
    JobId job;
    std::list<pid_t>::iterator lru;
  };

  // REQUIRES: mu_ held. Job of (pid, start) if registered or cached; false if unknown.
  bool Known(pid_t pid, uint64_t start, JobId* job);
  void CacheLocked(pid_t pid, uint64_t start, JobId job);
  void DropNegativesLocked();

  const std::unique_ptr<ProcReader> proc_;
  const AttributorOptions opt_;

  mutable std::mutex mu_;  // leaf lock: taken after JobRegistry's, never before
  std::unordered_map<pid_t, Registered> registered_;  // guarded by mu_
  std::unordered_map<pid_t, Cached> cache_;           // guarded by mu_
  std::list<pid_t> lru_;                              // guarded by mu_; front = newest
  uint64_t generation_ = 0;  // guarded by mu_; bumped by every registration change
};

}  // namespace epochfs::control
