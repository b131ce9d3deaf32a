// Sampler: /proc/meminfo and the daemon's memory cgroup (v1 or v2).
#include "epochfs/governor/sampler.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace epochfs::governor {
namespace {

// Limits at or above this mean "unlimited" (v1 writes 2^63 rounded to pages).
constexpr uint64_t kUnlimited = uint64_t{1} << 60;

bool IsDir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The first number in a file ("max" and garbage: false).
bool ReadNumber(const std::string& path, uint64_t* out) {
  std::ifstream in(path);
  std::string v;
  if (!(in >> v) || v.empty() || v.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  errno = 0;
  const unsigned long long x = std::strtoull(v.c_str(), nullptr, 10);
  if (errno != 0) return false;
  *out = x;
  return true;
}

// A "key value" line of memory.stat or "Key: value kB" of /proc/meminfo.
bool ReadKey(const std::string& path, const std::string& key, uint64_t* out) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0 || line.size() == key.size()) continue;
    const char sep = line[key.size()];
    if (sep != ' ' && sep != ':' && sep != '\t') continue;
    unsigned long long v = 0;
    if (std::sscanf(line.c_str() + key.size() + 1, " %llu", &v) != 1) return false;
    *out = v;
    if (line.find(" kB") != std::string::npos) *out *= 1024;
    return true;
  }
  return false;
}

}  // namespace

Sampler::Sampler(std::string proc_root, std::string cgroup_root)
    : proc_root_(std::move(proc_root)), cgroup_root_(std::move(cgroup_root)) {
  std::ifstream in(proc_root_ + "/self/cgroup");
  std::string line;
  std::string v1_path, v2_path;
  bool have_v2 = false;
  while (std::getline(in, line)) {
    // "ID:controllers:path"; the path may contain ':'.
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string ctrls = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (ctrls.empty()) {
      v2_path = path;
      have_v2 = true;
      continue;
    }
    std::istringstream cs(ctrls);
    for (std::string c; std::getline(cs, c, ',');) {
      if (c == "memory") v1_path = path;
    }
  }
  if (!v1_path.empty()) {
    // Inside a cgroup namespace the path may not exist under the mount; the
    // mount's root is then the daemon's cgroup.
    for (const std::string& d : {cgroup_root_ + "/memory" + v1_path, cgroup_root_ + "/memory"}) {
      if (IsDir(d) && std::ifstream(d + "/memory.usage_in_bytes").good()) {
        dir_ = d;
        break;
      }
    }
  }
  if (dir_.empty() && have_v2) {
    // Pure v2 mounts at cgroup_root; hybrid mounts the unified tree below it.
    for (const std::string& root : {cgroup_root_, cgroup_root_ + "/unified"}) {
      const std::string d = root + (v2_path == "/" ? "" : v2_path);
      if (IsDir(d) && std::ifstream(d + "/memory.current").good()) {
        dir_ = d;
        v2_root_ = root;
        v2_ = true;
        break;
      }
    }
  }
}

Result<MemoryReading> Sampler::Read() const {
  MemoryReading r;
  const std::string meminfo = proc_root_ + "/meminfo";
  if (!ReadKey(meminfo, "MemTotal", &r.mem_total) ||
      !ReadKey(meminfo, "MemAvailable", &r.mem_available)) {
    return IoError(meminfo + ": no MemTotal/MemAvailable");
  }
  r.total = r.mem_total;
  r.available = std::min(r.mem_available, r.mem_total);
  if (dir_.empty()) return r;

  uint64_t limit = 0, usage = 0, inactive = 0;
  bool ok = false;
  if (!v2_) {
    ok = ReadKey(dir_ + "/memory.stat", "hierarchical_memory_limit", &limit) ||
         ReadNumber(dir_ + "/memory.limit_in_bytes", &limit);
    ok = ok && ReadNumber(dir_ + "/memory.usage_in_bytes", &usage);
    if (!ReadKey(dir_ + "/memory.stat", "total_inactive_file", &inactive)) inactive = 0;
  } else {
    // The smallest memory.max from the cgroup up to the root ("max": none).
    limit = UINT64_MAX;
    for (std::string d = dir_; d.size() >= v2_root_.size();) {
      uint64_t l = 0;
      if (ReadNumber(d + "/memory.max", &l)) limit = std::min(limit, l);
      if (d == v2_root_) break;
      d = d.substr(0, d.rfind('/'));
    }
    ok = ReadNumber(dir_ + "/memory.current", &usage);
    if (!ReadKey(dir_ + "/memory.stat", "inactive_file", &inactive)) inactive = 0;
  }
  r.cgroup_dir = dir_;
  if (!ok || limit >= kUnlimited || limit >= r.mem_total) return r;
  r.cgroup_limited = true;
  r.cgroup_limit = limit;
  r.cgroup_usage = usage;
  r.cgroup_inactive_file = std::min(inactive, usage);
  const uint64_t working_set = usage - r.cgroup_inactive_file;
  const uint64_t cg_avail = limit > working_set ? limit - working_set : 0;
  r.total = limit;
  r.available = std::min(r.available, cg_avail);
  return r;
}

}  // namespace epochfs::governor
