// Content checksums. The only place that includes xxhash.h is src/common/hash.cc.
#pragma once

#include <cstddef>
#include <cstdint>

namespace epochfs {

// XXH3-64 of [data, data+len).
uint64_t Checksum(const void* data, size_t len);
// XXH3-64 of [data, data+len) with `seed`: with a seed nobody else knows, the
// values cannot be aimed (hash tables keyed by them stay balanced whatever
// the input).
uint64_t SeededHash(const void* data, size_t len, uint64_t seed);

}  // namespace epochfs
