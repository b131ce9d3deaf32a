#include "epochfs/cache/prefetch_depth.h"

#include <algorithm>

namespace epochfs::cache {

size_t PrefetchDepth::Room(size_t loading) const {
  const size_t busy = unread_.size() + loading;
  return busy >= depth_ ? 0 : depth_ - busy;
}

bool PrefetchDepth::Read(ObjectId id) {
  if (unread_.erase(id) == 0) return false;
  ++read_;
  depth_ = std::min<uint32_t>(kMax, depth_ + 1);
  return true;
}

bool PrefetchDepth::Left(ObjectId id) {
  if (unread_.erase(id) == 0) return false;
  ++wasted_;
  depth_ = std::max<uint32_t>(1, depth_ / 2);
  return true;
}

}  // namespace epochfs::cache
