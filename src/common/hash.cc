#include "epochfs/common/hash.h"

#include <xxhash.h>

namespace epochfs {

uint64_t Checksum(const void* data, size_t len) { return XXH3_64bits(data, len); }

uint64_t SeededHash(const void* data, size_t len, uint64_t seed) {
  return XXH3_64bits_withSeed(data, len, seed);
}

}  // namespace epochfs
