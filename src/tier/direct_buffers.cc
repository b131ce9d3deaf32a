// DirectBuffers (direct_buffers.h): aligned buffers kept for reuse.
#include "epochfs/tier/direct_buffers.h"

#include <cstdlib>
#include <new>

namespace epochfs::tier {

DirectBuffers::Buffer::Buffer(size_t bytes)
    : size((bytes + kDirectAlign - 1) / kDirectAlign * kDirectAlign) {
  data = static_cast<uint8_t*>(std::aligned_alloc(kDirectAlign, size == 0 ? kDirectAlign : size));
  if (data == nullptr) throw std::bad_alloc();
}

DirectBuffers::Buffer::~Buffer() { std::free(data); }

std::unique_ptr<DirectBuffers::Buffer> DirectBuffers::Take(size_t bytes) {
  if (bytes <= max_bytes_) {
    std::lock_guard lock(mu_);
    if (!free_.empty()) {  // every one kept is max_bytes_ large
      std::unique_ptr<Buffer> b = std::move(free_.back());
      free_.pop_back();
      return b;
    }
  }
  // None fits: a new one, of the largest size kept when that holds `bytes`,
  // so that any buffer kept serves any later read. Only the pages a read
  // touched are resident.
  return std::make_unique<Buffer>(bytes <= max_bytes_ ? max_bytes_ : bytes);
}

void DirectBuffers::Give(std::unique_ptr<Buffer> b) {
  if (b == nullptr || b->size != max_bytes_) return;  // freed here
  std::lock_guard lock(mu_);
  if (free_.size() < keep_) free_.push_back(std::move(b));
}

size_t DirectBuffers::kept() const {
  std::lock_guard lock(mu_);
  return free_.size();
}

}  // namespace epochfs::tier
