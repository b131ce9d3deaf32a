#include "epochfs/store/object.h"

#include <sys/random.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "epochfs/common/hash.h"
#include "epochfs/store/byte_pool.h"

namespace epochfs::store {

namespace {

// Drawn once per process: a user who writes the paths of a samples list
// cannot choose the ids they get, so the policy's tables keyed by id stay
// balanced (ids are never compared across processes; a trace keeps its own).
uint64_t IdSeed() {
  static const uint64_t seed = [] {
    uint64_t s = 0;
    if (::getrandom(&s, sizeof(s), 0) != static_cast<ssize_t>(sizeof(s))) {
      s = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    }
    return s;
  }();
  return seed;
}

}  // namespace

Object::~Object() { GiveBuffer(std::move(data)); }

uint64_t ObjectChecksum(const char* data, size_t len) {
  const std::vector<uint8_t> sums = BlockSums(data, len, kChecksumBlockBytes);
  return ObjectChecksumOfSums(sums.data(), sums.size());
}

uint64_t ObjectChecksumOfSums(const uint8_t* sums, size_t sums_len) {
  return Checksum(sums, sums_len);
}

cache::ObjectId ObjectIdOf(std::string_view rel) { return SeededHash(rel.data(), rel.size(), IdSeed()); }

cache::ObjectId BlockIdOf(std::string_view rel, uint64_t offset, uint64_t length) {
  // rel, a NUL (which no path holds) and the range: never a file's own key.
  std::string key(rel);
  key.push_back('\0');
  for (uint64_t v : {offset, length}) {
    for (int i = 0; i < 8; ++i) key.push_back(static_cast<char>(v >> (8 * i)));
  }
  return SeededHash(key.data(), key.size(), IdSeed());
}

std::vector<uint64_t> RefillSums(const char* data, uint64_t size, uint64_t block) {
  std::vector<uint64_t> sums;
  if (block == 0 || size <= block) return sums;
  sums.reserve((size + block - 1) / block);
  for (uint64_t off = 0; off < size; off += block) {
    sums.push_back(Checksum(data + off, static_cast<size_t>(std::min(block, size - off))));
  }
  return sums;
}

}  // namespace epochfs::store
