#include "epochfs/common/histogram.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace epochfs::histogram_test {

TEST(Histogram, BoundsAreInclusiveAndCumulative) {
  Histogram h;
  h.Observe(0);               // first bucket
  h.Observe(10'000);          // exactly the first bound: still the first bucket
  h.Observe(10'001);          // the second
  h.Observe(1'000'000'000);   // exactly 1 s
  h.Observe(61'000'000'000);  // above every bound: +Inf only
  const Histogram::Reading r = h.Read();
  EXPECT_EQ(r.count, 5u);
  EXPECT_EQ(r.sum_ns, 0u + 10'000 + 10'001 + 1'000'000'000 + 61'000'000'000);
  EXPECT_EQ(r.cumulative[0], 2u);
  EXPECT_EQ(r.cumulative[1], 3u);
  const size_t one_s = 12;
  ASSERT_EQ(Histogram::kBoundsNs[one_s], 1'000'000'000u);
  EXPECT_EQ(r.cumulative[one_s - 1], 3u);
  EXPECT_EQ(r.cumulative[one_s], 4u);
  EXPECT_EQ(r.cumulative[Histogram::kBuckets - 1], 4u);
  for (size_t i = 1; i < Histogram::kBuckets; ++i) {
    EXPECT_LT(Histogram::kBoundsNs[i - 1], Histogram::kBoundsNs[i]);
    EXPECT_LE(r.cumulative[i - 1], r.cumulative[i]);
  }
}

TEST(Histogram, ConcurrentObservationsAreAllCounted) {
  Histogram h;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h, t] {
      for (uint64_t i = 0; i < 10'000; ++i) h.Observe((i % 7) * 1'000'000 + t);
    });
  }
  for (std::thread& t : threads) t.join();
  const Histogram::Reading r = h.Read();
  EXPECT_EQ(r.count, 40'000u);
  EXPECT_EQ(r.cumulative[Histogram::kBuckets - 1], 40'000u);
}

}  // namespace epochfs::histogram_test
