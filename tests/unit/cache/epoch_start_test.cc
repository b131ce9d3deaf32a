// The "future" policy at an epoch's start: which files of the next epoch it
// holds. Their count is Belady's; their places are spread over the epoch
// (docs/future_policy.md, "Hits spread over the epoch") except the first
// batch of each loader, which the next epoch reads before any load can
// overlap its compute: those are held at their declared places.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "epochfs/cache/future_policy.h"
#include "policy_harness.h"

namespace epochfs::cache {
// Named, not anonymous: a unity build compiles this file with the others of its binary.
namespace epoch_start_test {

using testing::Harness;
using testing::Iota;
using testing::UniformSamples;

constexpr uint32_t kSamples = 20;
constexpr uint64_t kSize = 100;
constexpr ObjectId kBase = 1000;

std::unique_ptr<Policy> Future(uint64_t budget) {
  FuturePolicyParams p;
  p.budget_bytes = budget;
  return MakeFuturePolicy(p);
}

JobSpec Spec(uint32_t loaders, uint32_t batch) {
  JobSpec s;
  s.id = 1;
  s.name = "j1";
  s.batch_size = batch;
  s.loaders = loaders;
  s.epochs = 2;
  return s;
}

// Epoch 1's order: epoch 0's rotated by `r`.
std::vector<uint32_t> Rotated(uint32_t r) {
  std::vector<uint32_t> v = Iota(kSamples);
  std::rotate(v.begin(), v.begin() + r, v.end());
  return v;
}

// Reads epoch 0 in order with room for half the samples; returns what is
// held when epoch 1 (order `next`) starts.
std::vector<bool> HeldAtEpochOne(Harness& h, const JobSpec& spec,
                                 const std::vector<uint32_t>& next) {
  h.AddJob(spec, UniformSamples(kSamples, kSize, kBase));
  EXPECT_TRUE(h.policy().SetOrder(1, 0, Iota(kSamples)).ok());
  EXPECT_TRUE(h.policy().SetOrder(1, 1, next).ok());
  h.BeginEpoch(1, 0, 1);
  uint64_t t = 10;
  for (uint32_t x = 0; x < kSamples; ++x) h.Read(1, x, t += 1000);
  h.BeginEpoch(1, 1, t + 1000);
  std::vector<bool> held;  // by position in epoch 1
  for (uint32_t x : next) held.push_back(h.resident(kBase + x));
  return held;
}

// Two loaders, batches of one: epoch 1's first two reads are held whatever
// its order (before, they were held only when their spread places happened
// to come early); the other half of the budget is spread, not epoch 1's
// next eight reads (Belady's run of hits, then of misses); and as many hit
// as before.
TEST(FutureEpochStart, TheFirstBatchOfEachLoaderIsHeld) {
  for (uint32_t r = 0; r < kSamples; r += 2) {
    Harness h(Future(10 * kSize));
    const std::vector<uint32_t> next = Rotated(r);
    const std::vector<bool> held = HeldAtEpochOne(h, Spec(2, 1), next);
    EXPECT_TRUE(held[0] && held[1]) << "rotation " << r;
    EXPECT_EQ(std::count(held.begin(), held.end(), true), 10) << "rotation " << r;
    EXPECT_LT(std::count(held.begin(), held.begin() + 10, true), 10)
        << "rotation " << r << ": past the lead, the places are spread";
    int hits = 0;
    uint64_t t = 1'000'000;
    for (uint32_t x : next) hits += h.Read(1, x, t += 1000);
    EXPECT_EQ(hits, 10) << "rotation " << r;
  }
}

// The lead is loaders x batch size reads: 3 loaders of batches of 2 hold
// epoch 1's first six.
TEST(FutureEpochStart, TheLeadIsLoadersTimesBatchSize) {
  for (uint32_t r = 0; r < kSamples; r += 3) {
    Harness h(Future(10 * kSize));
    const std::vector<bool> held = HeldAtEpochOne(h, Spec(3, 2), Rotated(r));
    EXPECT_EQ(std::count(held.begin(), held.begin() + 6, true), 6) << "rotation " << r;
    EXPECT_EQ(std::count(held.begin(), held.end(), true), 10) << "rotation " << r;
  }
}

}  // namespace epoch_start_test
}  // namespace epochfs::cache
