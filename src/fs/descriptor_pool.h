// DescriptorPool: the descriptors users' open files hold in the daemon, all
// users together, bounded so that the daemon keeps a reserve for its own
// needs.
//
// An open spill file and an open streamed dataset file each hold a descriptor
// for as long as the user keeps the file open. Per-user bounds (limits.*)
// stop one user; this pool stops many together from taking the descriptors
// the daemon needs to serve everyone else (loading uncached dataset files,
// listings, the spill store). At most `cap` may be held at once, root's
// included; past it an open fails with ENFILE (the table is full, not the
// caller's share). ForLimit() sizes it from RLIMIT_NOFILE: the limit less a
// reserve of a quarter of it, at least 128.
// Thread safety: thread-safe (one atomic).
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace epochfs::fs {

class DescriptorPool {
 public:
  explicit DescriptorPool(uint64_t cap) : cap_(cap) {}

  // The pool for this process's soft RLIMIT_NOFILE (read now).
  static DescriptorPool ForLimit() {
    struct rlimit rl {};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
      return DescriptorPool(UINT64_MAX);
    }
    const uint64_t limit = rl.rlim_cur;
    const uint64_t reserve = std::max<uint64_t>(128, limit / 4);
    return DescriptorPool(limit > reserve ? limit - reserve : 0);
  }

  // One more descriptor held; false when `cap` are held already.
  bool Take() {
    uint64_t n = held_.load(std::memory_order_relaxed);
    do {
      if (n >= cap_) return false;
    } while (!held_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
    return true;
  }
  // One given back (REQUIRES: a Take that succeeded).
  void Give() { held_.fetch_sub(1, std::memory_order_relaxed); }

  uint64_t cap() const { return cap_; }
  uint64_t held() const { return held_.load(std::memory_order_relaxed); }

 private:
  const uint64_t cap_;
  std::atomic<uint64_t> held_{0};
};

}  // namespace epochfs::fs
