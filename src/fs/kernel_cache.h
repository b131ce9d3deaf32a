// KernelCacheInvalidator: keeps the kernel's page-cache copies of dataset files
// within what the RAM tier holds.
//
// With fuse.kernel_cache on, an open of an unchanged file keeps the kernel's
// cached pages (FOPEN_KEEP_CACHE), so repeat reads never reach the daemon. When
// the RAM tier drops an object, its kernel copy is dropped too, so the kernel
// never holds more cached dataset bytes than the budget. The drop runs on a
// thread of its own: fuse_lowlevel_notify_inval_inode must not be called from
// a request handler (it can wait on pages that a pending READ holds).
//
// A drop queued for an object applies only to the pages it was queued for:
// each Remember gives the inode's pages a new generation, and a drop carries
// the generation its eviction saw. When the worker reaches it and the same
// version of the object was remembered again for the same pages since (it
// was loaded again, say prefetched, and an open or a READ gave the kernel
// its pages again), and the RAM tier holds that version (the Held check),
// the drop is skipped: the pages are again those of an object the daemon
// holds, and dropping them would throw away what a reader just read (a
// refill from LOWER under one copy). Anything else (another version, other
// pages, nothing remembered, the object gone) is dropped. Drops by inode
// (Drop) are never skipped.
//
// Thread safety: thread-safe. The Held check is called by the worker outside
// the invalidator's lock (it may take the RAM tier's, under which Dropped is
// called).
#pragma once

#include <fuse_lowlevel.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "epochfs/cache/policy.h"
#include "epochfs/store/version.h"

namespace epochfs::fs {

class KernelCacheInvalidator {
 public:
  // Drops the kernel's pages of `ino` ([off, off + len) when len > 0).
  using Invalidate = std::function<void(fuse_ino_t ino, uint64_t off, uint64_t len)>;
  // Whether the RAM tier holds version `v` of `id` (itself or handed over).
  using Held = std::function<bool(cache::ObjectId id, const store::Version& v)>;

  KernelCacheInvalidator() = default;
  ~KernelCacheInvalidator() { Stop(); }
  KernelCacheInvalidator(const KernelCacheInvalidator&) = delete;
  KernelCacheInvalidator& operator=(const KernelCacheInvalidator&) = delete;

  // Starts the worker for session `se` (fuse_lowlevel_notify_inval_inode).
  // REQUIRES: not started.
  void Start(fuse_session* se, Held held);
  // Starts the worker with `invalidate` in the kernel's place (tests).
  void Start(Invalidate invalidate, Held held);
  // Stops the worker; queued drops are discarded. Idempotent.
  void Stop();
  // `ino` was opened with the bytes of version `v` of `id` (a whole file);
  // or its bytes [off, off + len) were read from block `id` (len > 0).
  void Remember(cache::ObjectId id, fuse_ino_t ino, const store::Version& v, uint64_t off = 0,
                uint64_t len = 0);
  // The RAM tier dropped `id`: drop the kernel's pages of its inode (of the
  // block's range only, for a block), unless remembered again first (above).
  // Returns that inode, 0 when none was remembered.
  fuse_ino_t Dropped(cache::ObjectId id);
  // Drops the kernel's pages of `ino` now (of [off, off + len) when len > 0):
  // bytes a session without OPEN served that the RAM tier does not hold.
  void Drop(fuse_ino_t ino, uint64_t off = 0, uint64_t len = 0);

  // Waits until every queued drop has been applied or skipped (tests).
  void WaitIdle();
  // Drops skipped because their object was remembered again (tests).
  uint64_t skipped() const;

 private:
  struct Pages {
    fuse_ino_t ino = 0;
    uint64_t off = 0;
    uint64_t len = 0;  // 0: the whole inode
    bool operator==(const Pages&) const = default;
  };
  struct Remembered {
    Pages pages;
    store::Version version;
    uint64_t gen = 0;  // when remembered (next_gen_ then)
  };
  struct Queued {
    Pages pages;
    bool of_object = false;  // Dropped (may be skipped), not Drop
    cache::ObjectId id = 0;
    store::Version version;
    uint64_t gen = 0;  // next_gen_ at the eviction
  };
  void Loop();
  // Whether queued drop `q` is moot (above). REQUIRES: mu_ held.
  bool RememberedSince(const Queued& q) const;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Invalidate invalidate_;  // set by Start before the worker runs
  Held held_;              // set by Start before the worker runs
  bool started_ = false;                                      // guarded by mu_
  bool stop_ = false;                                         // guarded by mu_
  bool busy_ = false;                                         // guarded by mu_
  uint64_t next_gen_ = 1;                                     // guarded by mu_
  uint64_t skipped_ = 0;                                      // guarded by mu_
  std::deque<Queued> queue_;                                  // guarded by mu_
  std::unordered_map<cache::ObjectId, Remembered> pages_of_;  // guarded by mu_
  std::condition_variable idle_cv_;
  std::thread worker_;
};

}  // namespace epochfs::fs
