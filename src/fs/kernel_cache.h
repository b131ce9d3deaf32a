// KernelCacheInvalidator: keeps the kernel's page-cache copies of dataset files
// within what the RAM tier holds.
//
// With fuse.kernel_cache on, an open of an unchanged file keeps the kernel's
// cached pages (FOPEN_KEEP_CACHE), so repeat reads never reach the daemon. When
// the RAM tier drops an object, its kernel copy is dropped too, so the kernel
// never holds more cached dataset bytes than the budget. The drop runs on a
// thread of its own: fuse_lowlevel_notify_inval_inode must not be called from
// a request handler (it can wait on pages that a pending READ holds).
// Thread safety: thread-safe.
#pragma once

#include <fuse_lowlevel.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "epochfs/cache/policy.h"

namespace epochfs::fs {

class KernelCacheInvalidator {
 public:
  KernelCacheInvalidator() = default;
  ~KernelCacheInvalidator() { Stop(); }
  KernelCacheInvalidator(const KernelCacheInvalidator&) = delete;
  KernelCacheInvalidator& operator=(const KernelCacheInvalidator&) = delete;

  // Starts the worker for session `se`. REQUIRES: not started.
  void Start(fuse_session* se);
  // Stops the worker; queued drops are discarded. Idempotent.
  void Stop();
  // `ino` was opened with the bytes of `id` (a whole file); or its bytes
  // [off, off + len) were read from block `id` (len > 0).
  void Remember(cache::ObjectId id, fuse_ino_t ino, uint64_t off = 0, uint64_t len = 0);
  // The RAM tier dropped `id`: drop the kernel's pages of its inode (of the
  // block's range only, for a block). Returns that inode, 0 when none was
  // remembered.
  fuse_ino_t Dropped(cache::ObjectId id);
  // Drops the kernel's pages of `ino` now (of [off, off + len) when len > 0):
  // bytes a session without OPEN served that the RAM tier does not hold.
  void Drop(fuse_ino_t ino, uint64_t off = 0, uint64_t len = 0);

 private:
  struct Pages {
    fuse_ino_t ino = 0;
    uint64_t off = 0;
    uint64_t len = 0;  // 0: the whole inode
  };
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  fuse_session* se_ = nullptr;                               // guarded by mu_
  bool stop_ = false;                                        // guarded by mu_
  std::deque<Pages> queue_;                             // guarded by mu_
  std::unordered_map<cache::ObjectId, Pages> pages_of_;  // guarded by mu_
  std::thread worker_;
};

}  // namespace epochfs::fs
