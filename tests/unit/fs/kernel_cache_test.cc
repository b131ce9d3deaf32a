// KernelCacheInvalidator (src/fs/kernel_cache.h): a drop queued for an
// evicted object applies only to the pages it was queued for. The kernel is
// a fake that records what it is asked to drop; its first call is held, so
// that drops queue up behind it while the test re-admits objects.
#include "kernel_cache.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

namespace epochfs::fs {
namespace kernel_cache_test {

using Call = std::tuple<fuse_ino_t, uint64_t, uint64_t>;

// The kernel: records each drop; the first waits until Release.
struct FakeKernel {
  std::mutex mu;
  std::condition_variable cv;
  bool held = true;
  bool entered = false;
  std::vector<Call> calls;
  void Invalidate(fuse_ino_t ino, uint64_t off, uint64_t len) {
    std::unique_lock lock(mu);
    calls.emplace_back(ino, off, len);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [this] { return !held; });
  }
  void WaitEntered() {
    std::unique_lock lock(mu);
    cv.wait(lock, [this] { return entered; });
  }
  void Release() {
    std::lock_guard lock(mu);
    held = false;
    cv.notify_all();
  }
};

// The RAM tier: which (id, version) it holds.
struct FakeRam {
  std::mutex mu;
  std::set<std::pair<cache::ObjectId, int64_t>> held;
  void Hold(cache::ObjectId id, const store::Version& v) {
    std::lock_guard lock(mu);
    held.emplace(id, v.mtime_ns);
  }
  void Lose(cache::ObjectId id, const store::Version& v) {
    std::lock_guard lock(mu);
    held.erase({id, v.mtime_ns});
  }
  bool Holds(cache::ObjectId id, const store::Version& v) {
    std::lock_guard lock(mu);
    return held.count({id, v.mtime_ns}) != 0;
  }
};

struct Rig {
  FakeKernel kernel;
  FakeRam ram;
  KernelCacheInvalidator inv;
  Rig() {
    inv.Start(
        [this](fuse_ino_t ino, uint64_t off, uint64_t len) { kernel.Invalidate(ino, off, len); },
        [this](cache::ObjectId id, const store::Version& v) { return ram.Holds(id, v); });
  }
  // Keeps the worker busy with a drop of inode 1 until Run.
  void Hold() {
    inv.Drop(1);
    kernel.WaitEntered();
  }
  // Lets the worker run every queued drop; the calls made.
  std::vector<Call> Run() {
    kernel.Release();
    inv.WaitIdle();
    std::lock_guard lock(kernel.mu);
    return std::vector<Call>(kernel.calls.begin() + 1, kernel.calls.end());
  }
};

store::Version V(int64_t mtime) { return store::Version{100, mtime, mtime, 7}; }

TEST(KernelCacheInvalidator, AnEvictedObjectLoadedAgainBeforeItsDropKeepsItsNewPages) {
  Rig r;
  r.inv.Remember(10, 5, V(1));  // handed to the kernel (generation g)
  r.ram.Hold(10, V(1));
  r.inv.Remember(11, 6, V(1));
  r.ram.Hold(11, V(1));
  r.Hold();
  r.ram.Lose(10, V(1));
  EXPECT_EQ(r.inv.Dropped(10), 5u);  // evicted: a drop queued for g
  r.ram.Lose(11, V(1));
  EXPECT_EQ(r.inv.Dropped(11), 6u);
  r.ram.Hold(10, V(1));  // prefetched back, and opened again: g + 1
  r.inv.Remember(10, 5, V(1));
  EXPECT_EQ(r.Run(), (std::vector<Call>{{6, 0, 0}})) << "10's new pages are not dropped";
  EXPECT_EQ(r.inv.skipped(), 1u);
  // Evicted again later: dropped (the new generation's own drop).
  r.ram.Lose(10, V(1));
  EXPECT_EQ(r.inv.Dropped(10), 5u);
  r.inv.WaitIdle();
  std::lock_guard lock(r.kernel.mu);
  EXPECT_EQ(r.kernel.calls.back(), (Call{5, 0, 0}));
  EXPECT_EQ(r.kernel.calls.size(), 3u);
}

// The pages are dropped whenever they may not be those the RAM tier holds.
TEST(KernelCacheInvalidator, ADropAppliesUnlessTheSameVersionOfTheSamePagesIsHeldAgain) {
  Rig r;
  for (cache::ObjectId id = 20; id < 25; ++id) r.inv.Remember(id, id, V(1));
  r.inv.Remember(25, 9, V(1), 4096, 4096);  // a block's range
  r.Hold();
  for (cache::ObjectId id = 20; id < 26; ++id) r.inv.Dropped(id);
  r.inv.Remember(20, 20, V(2));  // the file changed: another version
  r.ram.Hold(20, V(2));
  r.inv.Remember(21, 21, V(1));  // remembered, but the RAM tier lost it again
  r.inv.Remember(22, 99, V(1));  // another inode (renumbered)
  r.ram.Hold(22, V(1));
  r.inv.Remember(23, 23, V(1));  // remembered and evicted again: not held
  r.inv.Dropped(23);
  // 24: never remembered again.
  r.inv.Remember(25, 9, V(1), 8192, 4096);  // another block range
  r.ram.Hold(25, V(1));
  EXPECT_EQ(r.Run(), (std::vector<Call>{{20, 0, 0},
                                        {21, 0, 0},
                                        {22, 0, 0},
                                        {23, 0, 0},
                                        {24, 0, 0},
                                        {9, 4096, 4096},
                                        {23, 0, 0}}));
  EXPECT_EQ(r.inv.skipped(), 0u);
}

// A drop by inode (bytes the RAM tier does not hold, a changed file) is
// never skipped, whatever is remembered of the inode.
TEST(KernelCacheInvalidator, DropsByInodeAlwaysApply) {
  Rig r;
  r.inv.Remember(30, 3, V(1));
  r.ram.Hold(30, V(1));
  r.Hold();
  r.inv.Drop(3);
  r.inv.Drop(3, 0, 4096);
  EXPECT_EQ(r.Run(), (std::vector<Call>{{3, 0, 0}, {3, 0, 4096}}));
  EXPECT_EQ(r.inv.skipped(), 0u);
}

}  // namespace kernel_cache_test
}  // namespace epochfs::fs
