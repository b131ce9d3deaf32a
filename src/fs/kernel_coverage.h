// KernelCoverage: how many bytes of each cached object (a whole file, or a
// block without OPEN) a session has sent the kernel, to know when the
// kernel's page cache holds all of it and the store may hand the object over
// (CacheFront::HandOver; fuse.one_copy).
//
// Counted per object, not per pass: the kernel's READs of one read of a
// file may be served by two passes (a read-ahead window can join the pass
// before a new READ at offset 0 has made its own). A READ the kernel sends
// twice counts twice, so an object may be handed over before every page
// arrived: the page missing is then a READ that refills the object from
// LOWER (a cost, never wrong bytes). Objects whose bytes never all arrive
// (a reader that stops early) stay counted, bounded: past kMaxObjects the
// counts start over (some objects are then handed over later, or kept).
// Internal to src/fs. Thread safety: thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "epochfs/cache/policy.h"

namespace epochfs::fs {

class KernelCoverage {
 public:
  static constexpr size_t kMaxObjects = 1 << 16;

  // `n` more bytes of `id` (of `size` bytes) were sent to the kernel.
  // True, once, when that makes `size` or more; the count is forgotten then.
  bool Add(cache::ObjectId id, uint64_t n, uint64_t size) {
    std::lock_guard lock(mu_);
    auto [it, fresh] = sent_.try_emplace(id, 0);
    it->second += n;
    if (it->second >= size) {
      sent_.erase(it);
      return true;
    }
    if (fresh && sent_.size() > kMaxObjects) {
      sent_.clear();
      sent_.emplace(id, n);
    }
    return false;
  }

  // `id` left the cache: its count is of no use any more.
  void Forget(cache::ObjectId id) {
    std::lock_guard lock(mu_);
    sent_.erase(id);
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return sent_.size();
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<cache::ObjectId, uint64_t> sent_;  // guarded by mu_
};

}  // namespace epochfs::fs
