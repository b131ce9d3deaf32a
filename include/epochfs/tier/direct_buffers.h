// DirectBuffers: page-aligned buffers for the disk tier's O_DIRECT reads
// (disk_tier.h), kept for reuse: a read takes one at least as large as its
// file (rounded up to kDirectAlign), and gives it back when its bytes are
// copied out, so that a warm epoch does not map, zero-fill and unmap a fresh
// buffer per file. Every buffer of a request up to `max_bytes` is
// `max_bytes` large (any kept one serves any such read), at most `keep` are
// kept, and only the pages reads touched are resident: memory outside the
// cache's budget, for the disk tier's 16 of 2 MiB at most 32 MiB, about 12
// MiB with files of 256-768 KiB. A larger request gets a buffer of its own,
// freed when given back.
//
// Ownership: a Buffer taken belongs to its taker until Give (or until it is
// destroyed: a read given up on keeps it, disk_io.h). Thread safety: Take and
// Give are thread-safe (one mutex, never held across an allocation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace epochfs::tier {

// The alignment of an O_DIRECT read's buffer, file offset and length: a page,
// which covers every logical block size up to it.
inline constexpr size_t kDirectAlign = 4096;

class DirectBuffers {
 public:
  struct Buffer {
    explicit Buffer(size_t bytes);
    ~Buffer();
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    uint8_t* data = nullptr;
    size_t size = 0;  // a multiple of kDirectAlign
  };

  DirectBuffers(size_t keep, size_t max_bytes) : keep_(keep), max_bytes_(max_bytes) {}
  // A buffer of at least `bytes`, rounded up to kDirectAlign.
  std::unique_ptr<Buffer> Take(size_t bytes);
  void Give(std::unique_ptr<Buffer> b);
  size_t kept() const;

 private:
  const size_t keep_, max_bytes_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Buffer>> free_;  // guarded by mu_
};

}  // namespace epochfs::tier
