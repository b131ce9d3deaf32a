#include "epochfs/common/hash.h"

#include <xxhash.h>

namespace epochfs {

uint64_t Checksum(const void* data, size_t len) { return XXH3_64bits(data, len); }

}  // namespace epochfs
