// Histogram: durations counted in fixed buckets, the shape of a Prometheus
// histogram (the LOWER load time and a reader's wait: store/cache_front.h).
//
// The bucket bounds are the same for every Histogram (kBoundsNs: 10 µs to
// 60 s, a roughly 1-2.5-5 ladder), so that two mounts' histograms add up and
// a dashboard's quantiles compare. A duration above the last bound counts in
// `count` (the +Inf bucket) only.
// Thread safety: Observe and Read from any thread, lock-free (relaxed
// atomics). A Read taken while Observe calls run may see an observation in
// its bucket before its `sum_ns`; `count` is the sum of the buckets, so the
// buckets and the count always agree, and every figure only grows.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace epochfs {

class Histogram {
 public:
  static constexpr size_t kBuckets = 18;
  // Upper bounds (inclusive, Prometheus' `le`), nanoseconds, ascending.
  static constexpr std::array<uint64_t, kBuckets> kBoundsNs = {
      10'000,        100'000,       500'000,        1'000'000,      2'500'000,
      5'000'000,     10'000'000,    25'000'000,     50'000'000,     100'000'000,
      250'000'000,   500'000'000,   1'000'000'000,  2'500'000'000,  5'000'000'000,
      10'000'000'000, 30'000'000'000, 60'000'000'000};

  struct Reading {
    // cumulative[i]: observations <= kBoundsNs[i] (non-decreasing in i).
    std::array<uint64_t, kBuckets> cumulative{};
    uint64_t count = 0;   // every observation (the +Inf bucket)
    uint64_t sum_ns = 0;  // their total
  };

  void Observe(uint64_t ns);
  Reading Read() const;

 private:
  // counts_[i]: observations in (kBoundsNs[i-1], kBoundsNs[i]]; the last:
  // above every bound.
  std::array<std::atomic<uint64_t>, kBuckets + 1> counts_{};
  std::atomic<uint64_t> sum_ns_{0};
};

}  // namespace epochfs
