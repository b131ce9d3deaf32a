// KernelCoverage (src/fs/kernel_coverage.h): when the kernel holds all of an
// object, counted over every pass and thread that sent it bytes.
#include "kernel_coverage.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace epochfs::fs {
namespace {

TEST(KernelCoverage, CompleteOnceWhenAllBytesWereSent) {
  KernelCoverage c;
  EXPECT_FALSE(c.Add(1, 100, 300));
  EXPECT_FALSE(c.Add(2, 50, 50 + 1));
  EXPECT_FALSE(c.Add(1, 100, 300));
  EXPECT_TRUE(c.Add(1, 100, 300));
  EXPECT_EQ(c.size(), 1u);  // 1 is forgotten once complete
  // Sent again (the kernel lost pages, the object was refilled): counted afresh.
  EXPECT_FALSE(c.Add(1, 299, 300));
  c.Forget(1);  // evicted: its count goes
  EXPECT_FALSE(c.Add(1, 1, 300));
  EXPECT_TRUE(c.Add(2, 1, 51));
  EXPECT_TRUE(c.Add(3, 0, 0)) << "an empty object is complete at once";
}

TEST(KernelCoverage, BoundedByStartingOver) {
  KernelCoverage c;
  for (cache::ObjectId id = 1; id <= KernelCoverage::kMaxObjects + 10; ++id) c.Add(id, 1, 2);
  EXPECT_LE(c.size(), KernelCoverage::kMaxObjects);
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
          if (c.Add(static_cast<cache::ObjectId>(o + 1), 10, 10 * kPieces)) ++complete;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(complete.load(), kObjects);
  EXPECT_EQ(c.size(), 0u);
}

}  // namespace
}  // namespace epochfs::fs
