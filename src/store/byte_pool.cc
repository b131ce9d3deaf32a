// Byte buffers for objects' bytes (byte_pool.h).
#include "epochfs/store/byte_pool.h"

#include <sys/mman.h>

#include <cstdint>
#include <mutex>
#include <utility>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // linux/mman.h, Linux 5.14
#endif

namespace epochfs::store {
namespace {

constexpr size_t kKeepFrom = 32u << 10;  // fuse.one_copy's mmap threshold
constexpr size_t kKeepTo = 1u << 20;

struct Pool {
  std::mutex mu;
  std::vector<std::vector<char>> kept;  // guarded by mu; each empty, its capacity kept
  size_t bytes = 0;                     // guarded by mu: their capacities
};

Pool& ThePool() {
  static Pool* pool = new Pool;  // never destroyed: objects may be freed at exit
  return *pool;
}

// A new buffer of n zero bytes; its pages, when it has its own, mapped in
// one call rather than a fault each (kernels before 5.14 refuse the call:
// the faults as before). Pages already mapped stay as they are.
std::vector<char> NewBuffer(size_t n) {
  std::vector<char> v;
  if (n < kKeepFrom) {
    v.resize(n);
    return v;
  }
  v.reserve(n);
  constexpr uintptr_t kPage = 4096;
  const auto at = reinterpret_cast<uintptr_t>(v.data());
  const uintptr_t from = (at + kPage - 1) & ~(kPage - 1);
  const uintptr_t to = (at + n) & ~(kPage - 1);
  if (to > from) (void)::madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
  v.resize(n);
  return v;
}

// A kept buffer of capacity n to n + n/8, its old bytes still in it (size as
// it was given back); empty when none fits.
std::vector<char> TakeKept(size_t n) {
  std::vector<char> v;
  if (n >= kKeepFrom && n <= kKeepTo) {
    Pool& p = ThePool();
    {
      std::lock_guard lock(p.mu);
      // The most recently kept first (its pages are the likeliest cached).
      for (size_t i = p.kept.size(); i-- > 0;) {
        const size_t cap = p.kept[i].capacity();
        if (cap < n || cap > n + n / 8) continue;
        v = std::move(p.kept[i]);
        p.kept[i] = std::move(p.kept.back());
        p.kept.pop_back();
        p.bytes -= cap;
        break;
      }
    }
  }
  return v;
}

}  // namespace

std::vector<char> TakeBuffer(size_t n) {
  std::vector<char> v = TakeKept(n);
  if (v.capacity() == 0) return NewBuffer(n);
  v.clear();
  v.resize(n);  // zeroes: as a new buffer's bytes
  return v;
}

std::vector<char> TakeBufferToFill(size_t n) {
  std::vector<char> v = TakeKept(n);
  if (v.capacity() == 0) return NewBuffer(n);
  v.resize(n);  // zeroes only what lies past its old size
  return v;
}

void GiveBuffer(std::vector<char>&& bytes) {
  std::vector<char> v = std::move(bytes);
  bytes.clear();
  const size_t cap = v.capacity();
  if (cap < kKeepFrom || cap > kKeepTo) return;  // freed here
  // Its bytes stay (TakeBufferToFill overwrites them; TakeBuffer zeroes).
  Pool& p = ThePool();
  {
    std::lock_guard lock(p.mu);
    if (p.bytes + cap <= kKeptBytes) {
      p.bytes += cap;
      p.kept.push_back(std::move(v));
      return;
    }
  }
  // Freed here, outside the lock (an unmapping).
}

void FreeKeptBuffers() {
  std::vector<std::vector<char>> drop;
  {
    Pool& p = ThePool();
    std::lock_guard lock(p.mu);
    drop.swap(p.kept);
    p.bytes = 0;
  }
  // Freed here, outside the lock.
}

size_t KeptBufferBytes() {
  Pool& p = ThePool();
  std::lock_guard lock(p.mu);
  return p.bytes;
}

}  // namespace epochfs::store
