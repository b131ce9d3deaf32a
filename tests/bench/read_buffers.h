// BufferPool: latencyfs's read buffers (part of the latencyfs benchmark
// fixture, tests/bench/latencyfs.cc), kept for the next reads once a read's
// answer is sent: a buffer allocated and freed for each read is an mmap, page
// faults and an munmap (a TLB shootdown on every core) a read, most of a
// read's cost in the fixture otherwise.
//
// Ownership: a Buffer taken by Get is the caller's until given back by Put.
// Memory: at most 1024 buffers kept, each at least 128 KiB (a read's size).
// Thread safety: thread-safe (one mutex).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace latencyfs {

class BufferPool {
 public:
  struct Buffer {
    std::unique_ptr<char[]> bytes;
    size_t capacity = 0;
  };
  // A buffer of at least `size` bytes: a kept one if the last kept is large
  // enough, else a new one.
  Buffer Get(size_t size) {
    {
      std::lock_guard lk(mu_);
      if (!free_.empty() && free_.back().capacity >= size) {
        Buffer b = std::move(free_.back());
        free_.pop_back();
        return b;
      }
    }
    const size_t capacity = std::max<size_t>(size, kMin);
    return {std::unique_ptr<char[]>(new char[capacity]), capacity};
  }
  // `b` kept for a later Get (freed if 1024 are kept already).
  void Put(Buffer b) {
    std::lock_guard lk(mu_);
    if (free_.size() < kKept) free_.push_back(std::move(b));
  }

 private:
  static constexpr size_t kMin = 128 * 1024;  // the kernel's usual read
  static constexpr size_t kKept = 1024;       // at most this many kept
  std::mutex mu_;
  std::vector<Buffer> free_;  // mu_
};

}  // namespace latencyfs
