// Content checksums. The only place that includes xxhash.h is src/common/hash.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace epochfs {

// XXH3-64 of [data, data+len).
uint64_t Checksum(const void* data, size_t len);
// Checksum over pieces given one after another: after Reset, Update(a) then
// Update(b) gives Digest() == Checksum(a followed by b). Owns XXH3's state
// (about 600 bytes on the heap, allocated by the constructor); movable, not
// copyable; not thread-safe (one owner at a time).
class ChecksumStream {
 public:
  ChecksumStream();
  ~ChecksumStream();
  ChecksumStream(ChecksumStream&& o) noexcept : state_(o.state_) { o.state_ = nullptr; }
  ChecksumStream& operator=(ChecksumStream&& o) noexcept;
  ChecksumStream(const ChecksumStream&) = delete;
  ChecksumStream& operator=(const ChecksumStream&) = delete;

  void Reset();
  void Update(const void* data, size_t len);
  uint64_t Digest() const;

 private:
  void* state_;  // XXH3_state_t
};

// XXH3-64 of [data, data+len) with `seed`: with a seed nobody else knows, the
// values cannot be aimed (hash tables keyed by them stay balanced whatever
// the input).
uint64_t SeededHash(const void* data, size_t len, uint64_t seed);
// The XXH3-64 of each `block`-byte block of [data, data+len) (the last may be
// short), each as 8 bytes little-endian: 8 * ceil(len / block) bytes.
std::vector<uint8_t> BlockSums(const void* data, size_t len, size_t block);

}  // namespace epochfs
