// Content checksums. The only place that includes xxhash.h is src/common/hash.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace epochfs {

// XXH3-64 of [data, data+len).
uint64_t Checksum(const void* data, size_t len);
// XXH3-64 of [data, data+len) with `seed`: with a seed nobody else knows, the
// values cannot be aimed (hash tables keyed by them stay balanced whatever
// the input).
uint64_t SeededHash(const void* data, size_t len, uint64_t seed);
// The XXH3-64 of each `block`-byte block of [data, data+len) (the last may be
// short), each as 8 bytes little-endian: 8 * ceil(len / block) bytes.
std::vector<uint8_t> BlockSums(const void* data, size_t len, size_t block);

}  // namespace epochfs
