// KernelCoverage (src/fs/kernel_coverage.h): when the kernel holds all of an
// object, by the ranges sent over every pass and thread that sent it bytes.
#include "kernel_coverage.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace epochfs::fs {
namespace kernel_coverage_test {

TEST(KernelCoverage, CompleteOnceWhenEveryRangeWasSent) {
  KernelCoverage c;
  EXPECT_FALSE(c.Add(1, 0, 100, 300));
  EXPECT_FALSE(c.Add(2, 0, 50, 50 + 1));
  EXPECT_FALSE(c.Add(1, 200, 100, 300));
  EXPECT_EQ(c.covered(1), 200u);
  EXPECT_TRUE(c.Add(1, 100, 100, 300));
  EXPECT_EQ(c.size(), 1u);  // 1 is forgotten once complete
  EXPECT_EQ(c.covered(1), 0u);
  // Sent again (the kernel lost pages, the object was refilled): afresh.
  EXPECT_FALSE(c.Add(1, 0, 299, 300));
  c.Forget(1);  // evicted: its ranges go
  EXPECT_FALSE(c.Add(1, 299, 1, 300));
  EXPECT_TRUE(c.Add(2, 50, 1, 51));
  EXPECT_TRUE(c.Add(3, 0, 0, 0)) << "an empty object is complete at once";
}

// The kernel asks for a range twice when it dropped its pages in between
// (a byte count would call the object complete after 2 x 100 bytes here).
TEST(KernelCoverage, ARangeSentTwiceCountsOnce) {
  KernelCoverage c;
  EXPECT_FALSE(c.Add(1, 0, 100, 200));
  EXPECT_FALSE(c.Add(1, 0, 100, 200));
  EXPECT_FALSE(c.Add(1, 50, 100, 200));  // overlaps: 50 new bytes
  EXPECT_EQ(c.covered(1), 150u);
  EXPECT_FALSE(c.Add(1, 0, 150, 200));
  EXPECT_TRUE(c.Add(1, 150, 50, 200));
}

// READs arrive out of order (read-ahead windows, several threads): ranges
// merge whatever their order, touching or overlapping.
TEST(KernelCoverage, RangesMergeInAnyOrder) {
  KernelCoverage c;
  const uint64_t page = 4096, size = 64 * page;
  for (uint64_t i = 1; i < 64; i += 2) EXPECT_FALSE(c.Add(7, i * page, page, size));
  EXPECT_EQ(c.covered(7), 32 * page);
  for (uint64_t i = 62; i >= 2; i -= 2) EXPECT_FALSE(c.Add(7, i * page, page, size));
  EXPECT_EQ(c.covered(7), 63 * page);
  EXPECT_FALSE(c.Add(7, 60 * page, 4 * page, size)) << "inside what was sent: nothing new";
  EXPECT_TRUE(c.Add(7, 0, page, size));
}

// A READ at or past the end (the kernel reads up to a page past the size)
// adds only what is inside the object.
TEST(KernelCoverage, BytesPastTheEndAreIgnored) {
  KernelCoverage c;
  EXPECT_FALSE(c.Add(1, 100, 4096, 100 + 50 + 10));
  EXPECT_EQ(c.covered(1), 60u);
  EXPECT_FALSE(c.Add(1, 500, 10, 160));
  EXPECT_FALSE(c.Add(1, UINT64_MAX - 1, UINT64_MAX, 160));
  EXPECT_EQ(c.covered(1), 60u);
  EXPECT_TRUE(c.Add(1, 0, 100, 160));
}

// Another size is another version: what was sent of the old one is no part
// of the new one.
TEST(KernelCoverage, AnotherSizeStartsOver) {
  KernelCoverage c;
  EXPECT_FALSE(c.Add(1, 0, 100, 200));
  EXPECT_FALSE(c.Add(1, 100, 100, 201));
  EXPECT_EQ(c.covered(1), 100u);
  EXPECT_FALSE(c.Add(1, 0, 100, 201));
  EXPECT_TRUE(c.Add(1, 200, 1, 201));
}

TEST(KernelCoverage, BoundedByStartingOver) {
  KernelCoverage c;
  for (cache::ObjectId id = 1; id <= KernelCoverage::kMaxObjects + 10; ++id) c.Add(id, 0, 1, 2);
  EXPECT_LE(c.size(), KernelCoverage::kMaxObjects);
  // One object's ranges are bounded too: every other byte, then the rest.
  const uint64_t size = 4 * KernelCoverage::kMaxRanges;
  for (uint64_t i = 0; i < size; i += 2) EXPECT_FALSE(c.Add(9, i, 1, size));
  EXPECT_LE(c.covered(9), KernelCoverage::kMaxRanges);
  EXPECT_TRUE(c.Add(9, 0, size, size));
}

// Pieces of one object sent by several threads: exactly one sees it complete.
TEST(KernelCoverage, ConcurrentPiecesCompleteExactlyOnce) {
  KernelCoverage c;
  constexpr int kThreads = 4, kObjects = 200, kPieces = 8;
  std::atomic<int> complete{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int o = 0; o < kObjects; ++o) {
        for (int p = t; p < kPieces; p += kThreads) {
          if (c.Add(static_cast<cache::ObjectId>(o + 1), 10 * p, 10, 10 * kPieces)) ++complete;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(complete.load(), kObjects);
  EXPECT_EQ(c.size(), 0u);
}

}  // namespace kernel_coverage_test
}  // namespace epochfs::fs
