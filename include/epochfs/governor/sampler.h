// Sampler: reads how much memory the daemon may use and how much is available.
//
// Sources: /proc/meminfo (MemTotal, MemAvailable) and the memory cgroup the
// daemon is in, found through /proc/self/cgroup:
//   v1: <memory mount>/<path>/memory.usage_in_bytes and memory.stat
//       (hierarchical_memory_limit: the smallest limit on the way to the root;
//       total_inactive_file),
//   v2: <unified mount>/<path>/memory.max (and every ancestor's), memory.current,
//       memory.stat (inactive_file).
// A cgroup's available bytes are limit − (usage − inactive file pages): the
// working set, as the kubelet counts it; inactive file pages are reclaimed
// before anyone is OOM-killed. The sample is the tighter of host and cgroup:
//   total     = min(MemTotal, limit)
//   available = min(MemAvailable, limit − working set)
//
// Errors: never fatal. A missing or unparsable cgroup file means "no cgroup
// limit"; a missing /proc/meminfo is an IoError from Read().
// Thread safety: Read() is const and may run on any thread.
#pragma once

#include <cstdint>
#include <string>

#include "epochfs/common/status.h"

namespace epochfs::governor {

struct MemoryReading {
  uint64_t mem_total = 0;      // /proc/meminfo MemTotal
  uint64_t mem_available = 0;  // /proc/meminfo MemAvailable
  bool cgroup_limited = false; // a cgroup limit below MemTotal was found
  uint64_t cgroup_limit = 0;   // bytes; 0 when none
  uint64_t cgroup_usage = 0;   // bytes charged to the cgroup
  uint64_t cgroup_inactive_file = 0;
  std::string cgroup_dir;      // the directory read, "" when none
  uint64_t total = 0;          // what the governor plans with (see above)
  uint64_t available = 0;
};

class Sampler {
 public:
  // proc_root and cgroup_root prefix the paths ("/proc", "/sys/fs/cgroup");
  // tests point them at fake trees.
  explicit Sampler(std::string proc_root = "/proc", std::string cgroup_root = "/sys/fs/cgroup");

  Result<MemoryReading> Read() const;

  // The cgroup directory found at construction ("" when none).
  const std::string& cgroup_dir() const { return dir_; }
  bool cgroup_v2() const { return v2_; }

 private:
  std::string proc_root_;
  std::string cgroup_root_;
  std::string dir_;  // the daemon's memory cgroup directory
  std::string v2_root_;
  bool v2_ = false;
};

}  // namespace epochfs::governor
