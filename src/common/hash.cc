#include "epochfs/common/hash.h"

#include <xxhash.h>

#include <algorithm>
#include <new>

namespace epochfs {

uint64_t Checksum(const void* data, size_t len) { return XXH3_64bits(data, len); }

ChecksumStream::ChecksumStream() : state_(XXH3_createState()) {
  if (!state_) throw std::bad_alloc();
  Reset();
}

ChecksumStream::~ChecksumStream() {
  if (state_) XXH3_freeState(static_cast<XXH3_state_t*>(state_));
}

ChecksumStream& ChecksumStream::operator=(ChecksumStream&& o) noexcept {
  if (this != &o) {
    if (state_) XXH3_freeState(static_cast<XXH3_state_t*>(state_));
    state_ = o.state_;
    o.state_ = nullptr;
  }
  return *this;
}

void ChecksumStream::Reset() { XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_)); }

void ChecksumStream::Update(const void* data, size_t len) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, len);
}

uint64_t ChecksumStream::Digest() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

uint64_t SeededHash(const void* data, size_t len, uint64_t seed) {
  return XXH3_64bits_withSeed(data, len, seed);
}

std::vector<uint8_t> BlockSums(const void* data, size_t len, size_t block) {
  const auto* p = static_cast<const char*>(data);
  std::vector<uint8_t> out;
  out.reserve(8 * ((len + block - 1) / block));
  for (size_t off = 0; off < len; off += block) {
    const uint64_t h = XXH3_64bits(p + off, std::min(block, len - off));
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(h >> (8 * i)));
  }
  return out;
}

}  // namespace epochfs
