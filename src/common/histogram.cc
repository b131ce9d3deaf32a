#include "epochfs/common/histogram.h"

#include <algorithm>

namespace epochfs {

void Histogram::Observe(uint64_t ns) {
  const size_t i = static_cast<size_t>(
      std::lower_bound(kBoundsNs.begin(), kBoundsNs.end(), ns) - kBoundsNs.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(ns, std::memory_order_relaxed);
}

Histogram::Reading Histogram::Read() const {
  Reading r;
  uint64_t running = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    r.cumulative[i] = running;
  }
  r.count = running + counts_[kBuckets].load(std::memory_order_relaxed);
  r.sum_ns = sum_ns_.load(std::memory_order_relaxed);
  return r;
}

}  // namespace epochfs
