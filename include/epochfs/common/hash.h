// Content checksums. The only place that includes xxhash.h is src/common/hash.cc.
#pragma once

#include <cstddef>
#include <cstdint>

namespace epochfs {

// XXH3-64 of [data, data+len).
uint64_t Checksum(const void* data, size_t len);

}  // namespace epochfs
