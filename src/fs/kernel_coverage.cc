// What the kernel was sent of each object, as ranges (kernel_coverage.h).
#include "kernel_coverage.h"

#include <algorithm>
#include <iterator>

namespace epochfs::fs {

bool KernelCoverage::Add(cache::ObjectId id, uint64_t off, uint64_t n, uint64_t size) {
  std::lock_guard lock(mu_);
  auto [it, fresh] = sent_.try_emplace(id);
  Sent& s = it->second;
  if (fresh) {
    s.size = size;
  } else if (s.size != size) {
    s = Sent{size, 0, {}};
  }
  uint64_t lo = std::min(off, size);
  uint64_t hi = std::min(size, off + std::min(n, UINT64_MAX - off));
  if (lo < hi) {
    // Merged with every range it overlaps or touches.
    auto r = s.ranges.upper_bound(lo);
    if (r != s.ranges.begin() && std::prev(r)->second >= lo) r = std::prev(r);
    while (r != s.ranges.end() && r->first <= hi) {
      lo = std::min(lo, r->first);
      hi = std::max(hi, r->second);
      s.covered -= r->second - r->first;
      r = s.ranges.erase(r);
    }
    if (s.ranges.size() >= kMaxRanges) {  // bounded: starts over
      s.ranges.clear();
      s.covered = 0;
    }
    s.ranges.emplace(lo, hi);
    s.covered += hi - lo;
  }
  if (s.covered >= s.size) {
    sent_.erase(it);
    return true;
  }
  if (fresh && sent_.size() > kMaxObjects) {
    Sent keep = std::move(s);
    sent_.clear();
    sent_.emplace(id, std::move(keep));
  }
  return false;
}

void KernelCoverage::Forget(cache::ObjectId id) {
  std::lock_guard lock(mu_);
  sent_.erase(id);
}

size_t KernelCoverage::size() const {
  std::lock_guard lock(mu_);
  return sent_.size();
}

uint64_t KernelCoverage::covered(cache::ObjectId id) const {
  std::lock_guard lock(mu_);
  auto it = sent_.find(id);
  return it == sent_.end() ? 0 : it->second.covered;
}

}  // namespace epochfs::fs
