// KernelCoverage: which byte ranges of each cached object (a whole file, or
// a block without OPEN) a session has sent the kernel, to know when the
// kernel's page cache holds all of it and the store may hand the object over
// (CacheFront::HandOver; fuse.one_copy).
//
// Kept per object, not per pass: the kernel's READs of one read of a file
// may be served by two passes (a read-ahead window can join the pass before
// a new READ at offset 0 has made its own). Kept as ranges, not as a count:
// a range the kernel asks for twice (it dropped the pages in between: a
// POSIX_FADV_DONTNEED, a reclaim) counts once, so an object is complete only
// when every byte of it was sent at least once. Pages the kernel drops after
// they were sent are not seen here: once handed over, such a page is a READ
// that refills the object from LOWER (KernelHandover::ObjectFor).
// The caller forgets an object's ranges when it leaves the cache (its pages
// leave the kernel with it). Objects whose bytes never all arrive (a reader
// that stops early) stay remembered, bounded: past kMaxObjects objects the
// ranges start over, and so do one object's past kMaxRanges ranges (some
// objects are then handed over later, or kept: a cost, never wrong bytes).
// Internal to src/fs. Thread safety: thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

#include "epochfs/cache/policy.h"

namespace epochfs::fs {

class KernelCoverage {
 public:
  static constexpr size_t kMaxObjects = 1 << 16;
  static constexpr size_t kMaxRanges = 1 << 12;

  // The `n` bytes at `off` of `id` (of `size` bytes) were sent to the kernel.
  // True, once, when every byte of [0, size) has been sent; the ranges are
  // forgotten then. Bytes past `size` are ignored; an object first seen at
  // another size (another version) starts over.
  bool Add(cache::ObjectId id, uint64_t off, uint64_t n, uint64_t size);

  // `id` left the cache (or its ranges are of no use any more).
  void Forget(cache::ObjectId id);

  // Objects with ranges remembered.
  size_t size() const;
  // The bytes of `id` sent so far (0 when none is remembered).
  uint64_t covered(cache::ObjectId id) const;

 private:
  struct Sent {
    uint64_t size = 0;
    uint64_t covered = 0;                 // bytes in `ranges`
    std::map<uint64_t, uint64_t> ranges;  // start -> end, disjoint, not touching
  };
  mutable std::mutex mu_;
  std::unordered_map<cache::ObjectId, Sent> sent_;  // guarded by mu_
};

}  // namespace epochfs::fs
