// The epoch policy, one patent step per test (seed 000, docs/policy.md).
//
// Conventions: samples are 100 bytes; job J's sample x is object J*1000 + x;
// a miss costs 1000 ns (t_s); e_i is set through the compute hint:
// e = clamp(b - floor(W*compute/t_s), 0, b).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "epochfs/cache/epoch_policy.h"
#include "policy_harness.h"

namespace epochfs::cache {
namespace {

using testing::Harness;
using testing::Iota;
using testing::Reversed;
using testing::Snap;
using testing::UniformSamples;

constexpr uint64_t kSize = 100;
constexpr uint64_t kLoad = 1000;

// The patent's steps are tested without the shared region (share_idle = false:
// exactly the policy before the shared region existed); the shared region has
// its own tests in shared_region_test.cc.
std::unique_ptr<Policy> Make(uint64_t budget, uint32_t warmup = 0, uint32_t tail = 0,
                             bool share_idle = false) {
  EpochPolicyParams p;
  p.budget_bytes = budget;
  p.warmup_batches = warmup;
  p.seed = 7;
  p.tail_batches = tail;
  p.share_idle = share_idle;
  return MakeEpochPolicy(p);
}

// compute hint for e with W=1, t_s = kLoad, b = 4: e = 4 - compute/1000.
uint64_t ComputeFor(uint32_t e) { return (4 - e) * kLoad; }

JobSpec Spec(JobId id, uint32_t epochs, uint64_t compute, uint32_t b = 4, uint32_t loaders = 1) {
  return JobSpec{id, "job" + std::to_string(id), b, epochs, loaders, compute};
}

ObjectId Obj(JobId job, uint32_t x) { return job * 1000 + x; }

struct Epochs : ::testing::Test {
  void Add(Harness& h, JobId id, uint32_t epochs, uint64_t compute, uint32_t n = 16,
           uint32_t b = 4, uint32_t loaders = 1) {
    h.AddJob(Spec(id, epochs, compute, b, loaders), UniformSamples(n, kSize, Obj(id, 0)));
  }
  // Reads `order` of job `id` from time `start`, one sample every `step` ns.
  static void ReadAll(Harness& h, JobId id, const std::vector<uint32_t>& order, uint64_t start,
                      uint64_t step) {
    for (size_t i = 0; i < order.size(); ++i) h.Read(id, order[i], start + (i + 1) * step, kLoad);
  }
  // Epoch 0 uncached (warm-up), orders 0 and 1 declared, T = n*step.
  static void WarmUp(Harness& h, JobId id, uint32_t n, uint64_t step,
                     std::vector<uint32_t> order1 = {}) {
    if (order1.empty()) order1 = Iota(n);
    ASSERT_TRUE(h.policy().SetOrder(id, 0, Iota(n)).ok());
    ASSERT_TRUE(h.policy().SetOrder(id, 1, order1).ok());
    h.BeginEpoch(id, 0, 0);
    ReadAll(h, id, Iota(n), 0, step);
  }
  static uint64_t Sum(const std::vector<uint32_t>& v) {
    return std::accumulate(v.begin(), v.end(), uint64_t{0});
  }
};

// ---- Step 1: warm-up ------------------------------------------------------

TEST_F(Epochs, WarmupMeasuresEpochTimeLoadTimeAndCompute) {
  Harness h(Make(100000));
  Add(h, 1, 5, /*compute=*/0, 16, 4, /*loaders=*/2);
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(16)).ok());
  ASSERT_TRUE(h.policy().SetOrder(1, 1, Iota(16)).ok());
  h.BeginEpoch(1, 0, 0);
  for (uint32_t x = 0; x < 15; ++x) {
    h.Read(1, x, (x + 1) * 625, kLoad);
    EXPECT_FALSE(h.last.admit) << "warm-up caches nothing";
    EXPECT_EQ(Snap(h.policy(), 1).state, JobState::kWarmup);
  }
  EXPECT_EQ(Snap(h.policy(), 1).batch, 3u);
  h.Read(1, 15, 16 * 625, kLoad);
  EXPECT_FALSE(h.last.admit);
  JobSnapshot s = Snap(h.policy(), 1);
  EXPECT_EQ(s.state, JobState::kCaching);
  EXPECT_EQ(s.epoch_time_ns, 10000u);  // T: first epoch, start to last batch
  EXPECT_EQ(s.load_ns_per_sample, kLoad);
  // compute = T/batches - b*t_s/W = 2500 - 4*1000/2 = 500
  EXPECT_EQ(s.compute_ns_per_batch, 500u);
  // e = clamp(b - floor(W*compute/t_s)) = 4 - floor(2*500/1000) = 3
  EXPECT_EQ(s.e, 3u);
  EXPECT_EQ(s.current.misses, 16u);
  EXPECT_EQ(s.current.hits, 0u);
  EXPECT_EQ(s.total.misses, 16u);
}

// A hit told at an open whose READ then needed the bytes again (one copy's
// refill, Policy::OnRefilled) moves from hits to refills in the job's
// counters, with the refill's wait; the residency does not move.
TEST_F(Epochs, AHitFoundToBeARefillIsCountedAsOne) {
  Harness h(Make(10000));
  Add(h, 1, 5, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  ReadAll(h, 1, Iota(16), 5000, 100);
  h.BeginEpoch(1, 2, 9000);
  ASSERT_TRUE(h.Read(1, 0, 9001)) << "no hit: the test tests nothing";
  const JobSnapshot before = Snap(h.policy(), 1);
  ASSERT_EQ(before.current.hits, 1u);
  const std::set<ObjectId> resident = h.resident_set();
  Access a{Obj(1, 0), kSize, 1, 0, 9100};
  a.wait_ns = 300;
  a.served = Access::Served::kRefill;
  h.policy().OnRefilled(a);
  const JobSnapshot after = Snap(h.policy(), 1);
  EXPECT_EQ(after.current.hits, before.current.hits - 1);
  EXPECT_EQ(after.current.refills, before.current.refills + 1);
  EXPECT_EQ(after.current.reads(), before.current.reads());
  EXPECT_EQ(after.current.lower_wait_ns, before.current.lower_wait_ns + 300);
  EXPECT_EQ(after.total.refills, before.total.refills + 1);
  EXPECT_EQ(h.resident_set(), resident);
  EXPECT_TRUE(h.policy().CheckInvariants().ok());
}

TEST_F(Epochs, WarmupOfMBatchesExtrapolatesAndCachesTheRestOfTheEpoch) {
  Harness h(Make(100000, /*warmup=*/2));
  Add(h, 1, 5, ComputeFor(4));
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(16)).ok());
  ASSERT_TRUE(h.policy().SetOrder(1, 1, Iota(16)).ok());
  h.BeginEpoch(1, 0, 0);
  for (uint32_t x = 0; x < 8; ++x) h.Read(1, x, (x + 1) * 500, kLoad);
  JobSnapshot s = Snap(h.policy(), 1);
  EXPECT_EQ(s.state, JobState::kCaching);
  EXPECT_EQ(s.epoch_time_ns, 8000u);  // 2 batches in 4000 ns, 4 batches in the epoch
  EXPECT_EQ(h.admissions, 0u);
  h.Read(1, 8, 4500, kLoad);
  EXPECT_TRUE(h.last.admit);
  EXPECT_EQ(h.policy().epoch_regions()->Where(1, 8), Region::kNext);
}

TEST_F(Epochs, WarmupEndsWhenTheNextEpochBeginsEarly) {
  Harness h(Make(100000));
  Add(h, 1, 5, ComputeFor(4));
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(16)).ok());
  h.BeginEpoch(1, 0, 0);
  for (uint32_t x = 0; x < 10; ++x) h.Read(1, x, (x + 1) * 100, kLoad);
  h.BeginEpoch(1, 1, 5000);
  JobSnapshot s = Snap(h.policy(), 1);
  EXPECT_EQ(s.state, JobState::kCaching);
  EXPECT_EQ(s.epoch_time_ns, 5000u);
  EXPECT_EQ(s.epoch, 1u);
}

// ---- Step 1: sorted list and gain coefficients ------------------------------

TEST_F(Epochs, JobsAreSortedByEpochTimeAndGainFallsLinearly) {
  Harness h(Make(100000));
  Add(h, 1, 5, ComputeFor(4));
  Add(h, 2, 5, ComputeFor(4));
  Add(h, 3, 5, ComputeFor(4));
  WarmUp(h, 2, 16, 150);  // T = 2400
  {
    JobSnapshot s = Snap(h.policy(), 2);
    EXPECT_EQ(s.rank, 0);
    EXPECT_DOUBLE_EQ(s.lambda, 1.0) << "a job alone has gain 1";
  }
  WarmUp(h, 3, 16, 200);  // T = 3200
  WarmUp(h, 1, 16, 100);  // T = 1600
  JobSnapshot s1 = Snap(h.policy(), 1), s2 = Snap(h.policy(), 2), s3 = Snap(h.policy(), 3);
  EXPECT_EQ(s1.epoch_time_ns, 1600u);
  EXPECT_EQ(s1.rank, 0);
  EXPECT_EQ(s2.rank, 1);
  EXPECT_EQ(s3.rank, 2);
  EXPECT_DOUBLE_EQ(s1.lambda, 2.0);  // λ_max for the fastest
  EXPECT_DOUBLE_EQ(s2.lambda, 1.0);
  EXPECT_DOUBLE_EQ(s3.lambda, 0.0);  // the slowest
  h.EndJob(2);
  EXPECT_EQ(Snap(h.policy(), 3).rank, 1);
  EXPECT_DOUBLE_EQ(Snap(h.policy(), 1).lambda, 2.0);
  EXPECT_DOUBLE_EQ(Snap(h.policy(), 3).lambda, 0.0);
}

TEST_F(Epochs, EqualEpochTimesGiveGainOne) {
  Harness h(Make(100000));
  Add(h, 1, 5, ComputeFor(4));
  Add(h, 2, 5, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  WarmUp(h, 2, 16, 100);
  EXPECT_DOUBLE_EQ(Snap(h.policy(), 1).lambda, 1.0);
  EXPECT_DOUBLE_EQ(Snap(h.policy(), 2).lambda, 1.0);
}

// ---- Step 2: h_i and e_i ---------------------------------------------------

TEST_F(Epochs, HitsUnderDefaultAllocationAndWantedHits) {
  Harness h(Make(1600));
  Add(h, 1, 5, /*compute=*/1000, 16, 4, /*loaders=*/2);
  Add(h, 2, 5, /*compute=*/0, 16, 4, 1);
  WarmUp(h, 1, 16, 100);
  WarmUp(h, 2, 16, 100);
  JobSnapshot s1 = Snap(h.policy(), 1), s2 = Snap(h.policy(), 2);
  // C = 1600/2 = 800 bytes = 8 samples; h = b*C/N = 4*8/16 = 2
  EXPECT_EQ(s1.default_alloc_bytes, 800u);
  EXPECT_DOUBLE_EQ(s1.h, 2.0);
  // e = 4 - floor(2*1000/1000) = 2
  EXPECT_EQ(s1.e, 2u);
  // measured compute: T/batches - b*t_s/W = 400 - 4000 < 0 -> 0 -> e = b
  EXPECT_EQ(s2.compute_ns_per_batch, 0u);
  EXPECT_EQ(s2.e, 4u);
}

TEST_F(Epochs, ComputeBoundJobWantsNothing) {
  Harness h(Make(1600));
  Add(h, 1, 5, /*compute=*/9000);
  WarmUp(h, 1, 16, 100);
  EXPECT_EQ(Snap(h.policy(), 1).e, 0u);
  EXPECT_EQ(Snap(h.policy(), 1).reserved_bytes, 0u);
  h.BeginEpoch(1, 1, 5000);
  ReadAll(h, 1, Iota(16), 5000, 100);
  EXPECT_EQ(h.admissions, 0u);
}

// ---- S31: the free pool -----------------------------------------------------

TEST_F(Epochs, PoolIsTheBudgetMinusEachJobsReservation) {
  Harness h(Make(10000));
  Add(h, 1, 5, ComputeFor(3));
  Add(h, 2, 5, ComputeFor(2));
  EXPECT_EQ(h.policy().pool_bytes(), 10000u);
  WarmUp(h, 1, 16, 100);
  WarmUp(h, 2, 16, 200);
  // reserve_i = min(C_i, e_i * ceil(N/b) * mean) = min(5000, 3*4*100), min(5000, 2*4*100)
  EXPECT_EQ(Snap(h.policy(), 1).reserved_bytes, 1200u);
  EXPECT_EQ(Snap(h.policy(), 2).reserved_bytes, 800u);
  EXPECT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 1200u);
  EXPECT_EQ(h.policy().pool_bytes(), 8000u);
}

TEST_F(Epochs, ReservationIsCappedByTheDefaultShare) {
  Harness h(Make(1000));
  Add(h, 1, 5, ComputeFor(4));
  Add(h, 2, 5, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  WarmUp(h, 2, 16, 200);
  EXPECT_EQ(Snap(h.policy(), 1).reserved_bytes, 500u);
  EXPECT_EQ(Snap(h.policy(), 2).reserved_bytes, 500u);
  EXPECT_EQ(h.policy().pool_bytes(), 0u);
}

// ---- S32/S34: batch counters over the next order ----------------------------

TEST_F(Epochs, AdmissionCountsInTheSamplesBatchOfTheNextOrder) {
  Harness h(Make(100000));
  Add(h, 1, 5, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Reversed(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{0, 0, 0, 0}));
  h.Read(1, 0, 5001);  // position 15 in order 2: batch 3
  EXPECT_TRUE(h.last.admit);
  EXPECT_EQ(h.policy().epoch_regions()->Where(1, 0), Region::kNext);
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{0, 0, 0, 1}));
  h.Read(1, 5, 5002);  // position 10: batch 2
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{0, 0, 1, 1}));
  h.Read(1, 14, 5003);  // position 1: batch 0
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{1, 0, 1, 1}));
  // Counters start from zero in every epoch.
  h.BeginEpoch(1, 2, 9000);
  EXPECT_TRUE(h.policy().epoch_regions()->NextCounters(1).empty()) << "order 3 not declared yet";
  ASSERT_TRUE(h.policy().SetOrder(1, 3, Iota(16)).ok());
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{0, 0, 0, 0}));
}

TEST_F(Epochs, SampleOutsideTheNextOrderIsNotAdmitted) {
  Harness h(Make(100000));
  Add(h, 1, 5, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, {0, 1, 2, 3, 4, 5, 6, 7}).ok());  // a shard
  h.BeginEpoch(1, 1, 5000);
  h.Read(1, 9, 5001);
  EXPECT_FALSE(h.last.admit);
  h.Read(1, 3, 5002);
  EXPECT_TRUE(h.last.admit);
}

// ---- S35: grant from the pool by gain --------------------------------------

TEST_F(Epochs, PoolGrantIsGainTimesTheRequestForTheFastestJob) {
  Harness h(Make(2000));
  Add(h, 1, 5, ComputeFor(4));  // fast, wants 1600, reserves C = 1000
  Add(h, 2, 5, ComputeFor(0));  // slow, wants nothing
  WarmUp(h, 1, 16, 100);        // T = 1600
  WarmUp(h, 2, 16, 200);        // T = 3200
  ASSERT_DOUBLE_EQ(Snap(h.policy(), 1).lambda, 2.0);
  ASSERT_EQ(h.policy().pool_bytes(), 1000u);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  for (uint32_t x = 0; x < 10; ++x) h.Read(1, x, 5001 + x);  // from the reservation
  EXPECT_EQ(h.policy().pool_bytes(), 1000u);
  EXPECT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 0u);
  h.Read(1, 10, 5100);  // asks 100, granted 2*100
  EXPECT_TRUE(h.last.admit);
  EXPECT_EQ(h.policy().pool_bytes(), 800u);
  EXPECT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 100u);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 1100u);
  h.Read(1, 11, 5101);  // uses the granted-but-unused 100
  EXPECT_EQ(h.policy().pool_bytes(), 800u);
  EXPECT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 0u);
}

TEST_F(Epochs, PoolGrantForTheSlowestJobIsExactlyTheRequest) {
  Harness h(Make(2000));
  Add(h, 1, 5, ComputeFor(0));  // fast, wants nothing
  Add(h, 2, 5, ComputeFor(4));  // slow (λ = 0), reserves 1000
  WarmUp(h, 1, 16, 100);
  WarmUp(h, 2, 16, 200);
  ASSERT_DOUBLE_EQ(Snap(h.policy(), 2).lambda, 0.0);
  ASSERT_TRUE(h.policy().SetOrder(2, 2, Iota(16)).ok());
  h.BeginEpoch(2, 1, 5000);
  for (uint32_t x = 0; x < 11; ++x) h.Read(2, x, 5001 + x);
  EXPECT_EQ(h.policy().pool_bytes(), 900u);
  EXPECT_EQ(Snap(h.policy(), 2).granted_unused_bytes, 0u);
  EXPECT_EQ(Snap(h.policy(), 2).next_bytes, 1100u);
}

// ---- S36: the counter cap ---------------------------------------------------

TEST_F(Epochs, BatchCounterNeverExceedsE) {
  Harness h(Make(100000));
  Add(h, 1, 5, ComputeFor(2));
  WarmUp(h, 1, 16, 100);
  ASSERT_EQ(Snap(h.policy(), 1).e, 2u);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  for (uint32_t x = 0; x < 16; ++x) {
    h.Read(1, x, 5001 + x);
    EXPECT_EQ(h.last.admit, x % 4 < 2) << "sample " << x;
  }
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{2, 2, 2, 2}));
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 800u);
}

// ---- S33: a hit in cur frees its bytes to the pool ----------------------------

TEST_F(Epochs, HitInCurReturnsItsBytesToThePoolAndEvicts) {
  Harness h(Make(10000));
  Add(h, 1, 5, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  ReadAll(h, 1, Iota(16), 5000, 100);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 1600u);
  EXPECT_EQ(h.policy().pool_bytes(), 8400u);
  h.BeginEpoch(1, 2, 9000);
  EXPECT_EQ(Snap(h.policy(), 1).cur_bytes, 1600u);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 0u);
  EXPECT_EQ(h.policy().epoch_regions()->Where(1, 3), Region::kCur);
  EXPECT_TRUE(h.Read(1, 0, 9001));
  EXPECT_EQ(h.policy().pool_bytes(), 8500u);
  EXPECT_EQ(h.last.evict, std::vector<ObjectId>{Obj(1, 0)});
  EXPECT_EQ(Snap(h.policy(), 1).cur_bytes, 1500u);
  EXPECT_EQ(Snap(h.policy(), 1).current.hits, 1u);
}

TEST_F(Epochs, HitInCurMovesTheSampleToNextWhenItIsWantedAgain) {
  Harness h(Make(10000));
  Add(h, 1, 5, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  ReadAll(h, 1, Iota(16), 5000, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 3, Iota(16)).ok());
  h.BeginEpoch(1, 2, 9000);
  EXPECT_TRUE(h.Read(1, 0, 9001));
  EXPECT_TRUE(h.last.evict.empty()) << "re-admitted for epoch 3: stays in the store";
  EXPECT_FALSE(h.last.admit) << "a hit never admits";
  EXPECT_EQ(h.policy().epoch_regions()->Where(1, 0), Region::kNext);
}

// ---- S37: taking space from the previous job in the list ----------------------

TEST_F(Epochs, EmptyPoolTakesFromThePreviousJobFreeSpaceThenByRandomEviction) {
  Harness h(Make(2000));
  Add(h, 1, 5, ComputeFor(4));  // fast: rank 0
  Add(h, 2, 5, ComputeFor(4));  // slow: rank 1
  WarmUp(h, 1, 16, 100);
  WarmUp(h, 2, 16, 200);
  ASSERT_EQ(h.policy().pool_bytes(), 0u);
  ASSERT_EQ(Snap(h.policy(), 2).rank, 1);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  ASSERT_TRUE(h.policy().SetOrder(2, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  h.BeginEpoch(2, 1, 5000);
  for (uint32_t x = 0; x < 5; ++x) h.Read(1, x, 5001 + x);
  for (uint32_t x = 0; x < 10; ++x) h.Read(2, x, 5001 + x);
  ASSERT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 500u);
  ASSERT_EQ(Snap(h.policy(), 2).granted_unused_bytes, 0u);

  // Job 2 is short: job 1 hands over a free unit, nothing is evicted.
  h.Read(2, 10, 5100);
  EXPECT_TRUE(h.last.admit);
  EXPECT_TRUE(h.last.evict.empty());
  EXPECT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 400u);
  EXPECT_EQ(Snap(h.policy(), 2).next_bytes, 1100u);

  // Job 1 fills its own quota; then job 2 takes by evicting a random sample.
  for (uint32_t x = 5; x < 9; ++x) h.Read(1, x, 5200 + x);
  ASSERT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 0u);
  ASSERT_EQ(Sum(h.policy().epoch_regions()->NextCounters(1)), 9u);
  const std::vector<uint32_t> before = h.policy().epoch_regions()->NextCounters(1);
  h.Read(2, 11, 5300);
  EXPECT_TRUE(h.last.admit);
  ASSERT_EQ(h.last.evict.size(), 1u);
  const ObjectId victim = h.last.evict[0];
  ASSERT_GE(victim, Obj(1, 0));
  ASSERT_LT(victim, Obj(1, 9));
  const uint32_t vx = static_cast<uint32_t>(victim - Obj(1, 0));
  EXPECT_EQ(h.policy().epoch_regions()->Where(1, vx), Region::kNone);
  std::vector<uint32_t> after = h.policy().epoch_regions()->NextCounters(1);
  EXPECT_EQ(after[vx / 4], before[vx / 4] - 1) << "the victim's batch counter drops";
  EXPECT_EQ(Sum(after), 8u);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 800u);
  EXPECT_EQ(Snap(h.policy(), 2).next_bytes, 1200u);
  EXPECT_EQ(h.policy().epoch_regions()->Where(2, 11), Region::kNext);
}

TEST_F(Epochs, FirstJobInTheListTakesFromNoOne) {
  Harness h(Make(2000));
  Add(h, 1, 5, ComputeFor(4));
  Add(h, 2, 5, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  WarmUp(h, 2, 16, 200);
  ASSERT_EQ(Snap(h.policy(), 1).rank, 0);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  ASSERT_TRUE(h.policy().SetOrder(2, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  h.BeginEpoch(2, 1, 5000);
  for (uint32_t x = 0; x < 4; ++x) h.Read(2, x, 5001 + x);  // job 2 has next samples
  for (uint32_t x = 0; x < 10; ++x) h.Read(1, x, 5001 + x);
  ASSERT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 0u);
  const uint64_t evictions = h.evictions;
  h.Read(1, 10, 5100);
  EXPECT_FALSE(h.last.admit);
  EXPECT_EQ(h.evictions, evictions);
  EXPECT_EQ(h.policy().epoch_regions()->Where(1, 10), Region::kNone);
  EXPECT_EQ(Snap(h.policy(), 2).next_bytes, 400u);
}

TEST_F(Epochs, TakingFailsWithoutChangeWhenThePreviousJobHasNothingInNext) {
  Harness h(Make(2000));
  Add(h, 1, 9, ComputeFor(4));
  Add(h, 2, 9, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  WarmUp(h, 2, 16, 200);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  ASSERT_TRUE(h.policy().SetOrder(2, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  h.BeginEpoch(2, 1, 5000);
  for (uint32_t x = 0; x < 10; ++x) h.Read(1, x, 5001 + x);
  h.BeginEpoch(1, 2, 6000);  // job 1: next -> cur (cur is never taken from)
  ASSERT_EQ(Snap(h.policy(), 1).cur_bytes, 1000u);
  ASSERT_EQ(Snap(h.policy(), 1).next_bytes + Snap(h.policy(), 1).granted_unused_bytes, 0u);
  for (uint32_t x = 0; x < 10; ++x) h.Read(2, x, 5001 + x);
  ASSERT_EQ(h.policy().pool_bytes(), 0u);
  h.Read(2, 10, 5100);
  EXPECT_FALSE(h.last.admit);
  EXPECT_EQ(h.evictions, 0u);
  EXPECT_EQ(Snap(h.policy(), 1).cur_bytes, 1000u);
  EXPECT_EQ(Snap(h.policy(), 2).next_bytes, 1000u);
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(2), (std::vector<uint32_t>{4, 4, 2, 0}));
}

// ---- Step 4: last epoch and end of training -----------------------------------

TEST_F(Epochs, LastEpochAdmitsNothingAndDrainsToThePool) {
  Harness h(Make(10000));
  Add(h, 1, 3, ComputeFor(2));
  WarmUp(h, 1, 16, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  ReadAll(h, 1, Iota(16), 5000, 100);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 800u);
  EXPECT_EQ(h.policy().SetOrder(1, 3, Iota(16)).code(), Code::kInvalidArgument);
  h.BeginEpoch(1, 2, 9000);
  JobSnapshot s = Snap(h.policy(), 1);
  EXPECT_EQ(s.state, JobState::kLastEpoch);
  EXPECT_EQ(s.rank, -1);
  EXPECT_EQ(s.granted_unused_bytes, 0u);
  EXPECT_EQ(s.cur_bytes, 800u);
  EXPECT_EQ(h.policy().pool_bytes(), 10000u - 800u);
  for (uint32_t x = 0; x < 15; ++x) {
    const bool hit = h.Read(1, x, 9001 + x);
    EXPECT_EQ(hit, x % 4 < 2);
    EXPECT_FALSE(h.last.admit);
  }
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 0u);
  h.Read(1, 15, 9100);
  EXPECT_EQ(Snap(h.policy(), 1).state, JobState::kDone);
  EXPECT_EQ(h.policy().pool_bytes(), 10000u);
  EXPECT_TRUE(h.resident_set().empty());
}

TEST_F(Epochs, EndJobReleasesEverything) {
  Harness h(Make(10000));
  Add(h, 1, 9, ComputeFor(4));
  Add(h, 2, 9, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  WarmUp(h, 2, 16, 200);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  ReadAll(h, 1, Iota(16), 5000, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 3, Iota(16)).ok());
  h.BeginEpoch(1, 2, 9000);
  for (uint32_t x = 0; x < 6; ++x) h.Read(1, x, 9001 + x);
  JobSnapshot s = Snap(h.policy(), 1);
  ASSERT_GT(s.cur_bytes, 0u);
  ASSERT_GT(s.next_bytes, 0u);
  const size_t held = h.resident_set().size();
  h.EndJob(1);
  EXPECT_EQ(h.last.evict.size(), held);
  EXPECT_TRUE(h.resident_set().empty());
  EXPECT_EQ(h.policy().Jobs().size(), 1u);
  // Job 2's reservation is all that is left outside the pool.
  EXPECT_EQ(h.policy().pool_bytes() + Snap(h.policy(), 2).granted_unused_bytes, 10000u);
  EXPECT_EQ(h.policy().EndJob(1).status().code(), Code::kNotFound);
  h.EndJob(2);
  EXPECT_EQ(h.policy().pool_bytes(), 10000u);
}

// ---- Orders and epochs ----------------------------------------------------------

TEST_F(Epochs, SetOrderRejectsBadOrdersAndChangesNothing) {
  Harness h(Make(10000));
  Add(h, 1, 4, ComputeFor(4), 8);
  Policy& p = h.policy();
  // The rules and their messages: tests/unit/declarations. Here: the policy
  // applies them (orders in use: the current and the next epoch's).
  EXPECT_EQ(p.SetOrder(1, 0, {0, 1, 8}).code(), Code::kInvalidArgument);
  EXPECT_EQ(p.SetOrder(1, 0, {3, 1, 3}).code(), Code::kInvalidArgument);
  EXPECT_EQ(p.SetOrder(1, 0, {}).code(), Code::kInvalidArgument);
  EXPECT_EQ(p.SetOrder(1, 4, Iota(8)).code(), Code::kInvalidArgument);  // 4 epochs: 0..3
  EXPECT_EQ(p.SetOrder(9, 0, Iota(8)).code(), Code::kNotFound);
  ASSERT_TRUE(p.SetOrder(1, 0, Iota(8)).ok());
  ASSERT_TRUE(p.SetOrder(1, 1, Iota(8)).ok());
  h.BeginEpoch(1, 0, 0);
  ReadAll(h, 1, Iota(8), 0, 100);
  ASSERT_TRUE(p.SetOrder(1, 2, Reversed(8)).ok());
  h.BeginEpoch(1, 1, 1000);
  h.Read(1, 0, 1001);  // counts in batch 1 of order 2
  const std::vector<uint32_t> counters = p.epoch_regions()->NextCounters(1);
  EXPECT_EQ(counters, (std::vector<uint32_t>{0, 1}));
  // In-use orders cannot change (same content is fine); past ones are refused.
  EXPECT_EQ(p.SetOrder(1, 2, Iota(8)).code(), Code::kInvalidArgument);
  EXPECT_TRUE(p.SetOrder(1, 2, Reversed(8)).ok());
  EXPECT_EQ(p.SetOrder(1, 1, Reversed(8)).code(), Code::kInvalidArgument);
  EXPECT_EQ(p.SetOrder(1, 0, Iota(8)).code(), Code::kInvalidArgument);
  EXPECT_EQ(p.SetOrder(1, 2, {0, 0}).code(), Code::kInvalidArgument);
  EXPECT_EQ(p.epoch_regions()->NextCounters(1), counters);
  EXPECT_EQ(p.epoch_regions()->Where(1, 0), Region::kNext);
  // A future order may be replaced until it is in use.
  EXPECT_TRUE(p.SetOrder(1, 3, Iota(8)).ok());
  EXPECT_TRUE(p.SetOrder(1, 3, Reversed(8)).ok());
  EXPECT_TRUE(p.CheckInvariants().ok());
}

TEST_F(Epochs, AtMostFourPendingOrders) {
  Harness h(Make(10000));
  Add(h, 1, 10, ComputeFor(4), 8);
  Policy& p = h.policy();
  for (uint32_t k = 0; k < 4; ++k) ASSERT_TRUE(p.SetOrder(1, k, Iota(8)).ok()) << k;
  EXPECT_EQ(p.SetOrder(1, 4, Iota(8)).code(), Code::kInvalidArgument);
  h.BeginEpoch(1, 1, 0);
  EXPECT_TRUE(p.SetOrder(1, 4, Iota(8)).ok()) << "epoch 0's order is no longer pending";
  EXPECT_EQ(p.SetOrder(1, 5, Iota(8)).code(), Code::kInvalidArgument);
  EXPECT_TRUE(p.CheckInvariants().ok());
}

TEST_F(Epochs, LifecycleErrors) {
  Harness h(Make(1000));
  Policy& p = h.policy();
  EXPECT_EQ(p.AddJob(JobSpec{kNoJob, "x", 4, 1, 1, 0}).code(), Code::kInvalidArgument);
  EXPECT_EQ(p.AddJob(JobSpec{1, "x", 0, 1, 1, 0}).code(), Code::kInvalidArgument);
  ASSERT_TRUE(p.AddJob(JobSpec{1, "x", 4, 3, 1, 0}).ok());
  EXPECT_EQ(p.AddJob(JobSpec{1, "y", 4, 3, 1, 0}).code(), Code::kExists);
  EXPECT_EQ(p.SetOrder(1, 0, Iota(4)).code(), Code::kInvalidArgument) << "no samples yet";
  EXPECT_EQ(p.BeginEpoch(1, 0, 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(p.SetSamples(1, {}).code(), Code::kInvalidArgument);
  EXPECT_EQ(p.SetSamples(2, UniformSamples(4, kSize, 1)).code(), Code::kNotFound);
  ASSERT_TRUE(p.SetSamples(1, UniformSamples(4, kSize, 1)).ok());
  ASSERT_TRUE(p.SetOrder(1, 0, Iota(4)).ok());
  EXPECT_EQ(p.SetSamples(1, UniformSamples(4, kSize, 1)).code(), Code::kBusy);
  ASSERT_TRUE(p.BeginEpoch(1, 1, 0).ok());
  EXPECT_TRUE(p.BeginEpoch(1, 1, 5).ok()) << "beginning the current epoch again is a no-op";
  EXPECT_EQ(p.BeginEpoch(1, 0, 9).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(p.BeginEpoch(1, 3, 9).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(p.BeginEpoch(7, 1, 9).status().code(), Code::kNotFound);
  EXPECT_TRUE(p.CheckInvariants().ok());
}

TEST_F(Epochs, FirstAccessStartsTheFirstDeclaredEpoch) {
  Harness h(Make(10000));
  Add(h, 1, 5, ComputeFor(4));
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  EXPECT_FALSE(Snap(h.policy(), 1).started);
  h.Read(1, 0, 10);
  JobSnapshot s = Snap(h.policy(), 1);
  EXPECT_TRUE(s.started);
  EXPECT_EQ(s.epoch, 2u);
  EXPECT_EQ(s.state, JobState::kWarmup);
}

TEST_F(Epochs, SkippingAnEpochReleasesTheNextRegion) {
  Harness h(Make(10000));
  Add(h, 1, 9, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  for (uint32_t x = 0; x < 8; ++x) h.Read(1, x, 5001 + x);
  h.BeginEpoch(1, 3, 6000);
  EXPECT_EQ(h.last.evict.size(), 8u);
  JobSnapshot s = Snap(h.policy(), 1);
  EXPECT_EQ(s.cur_bytes + s.next_bytes + s.tail_bytes, 0u);
  EXPECT_EQ(s.epoch, 3u);
}

// ---- Late reads, drops, shared objects ---------------------------------------------

TEST_F(Epochs, LateReadsHitTheTailUntilTheWindowCloses) {
  Harness h(Make(10000, 0, /*tail=*/1));
  Add(h, 1, 9, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  ReadAll(h, 1, Iota(16), 5000, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 3, Iota(16)).ok());
  h.BeginEpoch(1, 2, 9000);
  for (uint32_t x = 0; x < 13; ++x) h.Read(1, x, 9001 + x);  // 13..15 not read yet
  ASSERT_TRUE(h.policy().SetOrder(1, 4, Iota(16)).ok());
  h.BeginEpoch(1, 3, 9500);
  EXPECT_EQ(Snap(h.policy(), 1).tail_bytes, 300u);
  EXPECT_EQ(h.policy().epoch_regions()->Where(1, 14), Region::kTail);
  const uint64_t pool = h.policy().pool_bytes();
  EXPECT_TRUE(h.Read(1, 14, 9501)) << "a late read of epoch 2 hits the tail";
  EXPECT_EQ(h.policy().pool_bytes(), pool + 100);
  EXPECT_EQ(Snap(h.policy(), 1).batch, 0u) << "late reads do not count for epoch 3";
  EXPECT_EQ(Snap(h.policy(), 1).tail_bytes, 200u);
  for (uint32_t x = 0; x < 4; ++x) h.Read(1, x, 9600 + x);  // one batch of epoch 3
  EXPECT_EQ(Snap(h.policy(), 1).tail_bytes, 0u);
  EXPECT_EQ(h.policy().epoch_regions()->Where(1, 13), Region::kNone);
  EXPECT_FALSE(h.resident(Obj(1, 13)));
}

TEST_F(Epochs, DroppedObjectsLeaveTheirRegionsAndCounters) {
  Harness h(Make(10000));
  Add(h, 1, 9, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  for (uint32_t x = 0; x < 6; ++x) h.Read(1, x, 5001 + x);
  ASSERT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{4, 2, 0, 0}));
  const uint64_t pool = h.policy().pool_bytes();
  h.Drop(Obj(1, 1));
  EXPECT_EQ(h.policy().epoch_regions()->Where(1, 1), Region::kNone);
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{3, 2, 0, 0}));
  EXPECT_EQ(h.policy().pool_bytes(), pool + 100);
  h.Drop(Obj(1, 3));
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{2, 2, 0, 0}));
  // A miss on an object the policy believes resident repairs the same way,
  // then the sample may enter again.
  h.ForgetSilently(Obj(1, 2));
  EXPECT_FALSE(h.Touch(Access{Obj(1, 2), kSize, 1, 2, 5100}));
  EXPECT_TRUE(h.last.admit);
  EXPECT_EQ(h.policy().epoch_regions()->Where(1, 2), Region::kNext);
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{2, 2, 0, 0}));
}

TEST_F(Epochs, SharedObjectsStayUntilTheirLastHolderLetsGo) {
  Harness h(Make(100000));
  // Two jobs over the same 16 files (objects 1000..1015).
  h.AddJob(Spec(1, 9, ComputeFor(4)), UniformSamples(16, kSize, 1000));
  h.AddJob(Spec(2, 9, ComputeFor(4)), UniformSamples(16, kSize, 1000));
  WarmUp(h, 1, 16, 100);
  WarmUp(h, 2, 16, 200);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  ASSERT_TRUE(h.policy().SetOrder(2, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  h.BeginEpoch(2, 1, 5000);
  EXPECT_FALSE(h.Read(1, 0, 5001));
  EXPECT_TRUE(h.last.admit);
  EXPECT_TRUE(h.Read(2, 0, 5002));
  EXPECT_FALSE(h.last.admit);
  EXPECT_EQ(h.policy().epoch_regions()->Where(2, 0), Region::kNext);
  EXPECT_EQ(Snap(h.policy(), 2).next_bytes, 100u) << "each holder is charged";
  EXPECT_EQ(h.policy().resident_bytes(), 100u) << "stored once";
  h.BeginEpoch(1, 2, 9000);
  h.BeginEpoch(2, 2, 9000);
  EXPECT_TRUE(h.Read(1, 0, 9001));
  EXPECT_TRUE(h.last.evict.empty()) << "job 2 still holds it";
  EXPECT_TRUE(h.Read(2, 0, 9002));
  EXPECT_EQ(h.last.evict, std::vector<ObjectId>{1000});
}

TEST_F(Epochs, UnattributedAccessesNeverAdmit) {
  Harness h(Make(10000));
  h.set_size(5, 10);
  EXPECT_FALSE(h.Touch(Access{5, 10, kNoJob, -1, 0}));
  EXPECT_FALSE(h.last.admit);
  EXPECT_FALSE(h.Touch(Access{5, 10, 42, 3, 0}));  // unknown job
  EXPECT_FALSE(h.last.admit);
}

// ---- Budget changes (memory governor) ------------------------------------

TEST_F(Epochs, ShrinkTakesThePoolThenGrantsThenNextThenCurFarthestFirst) {
  Harness h(Make(10000));
  Add(h, 1, 5, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  h.BeginEpoch(1, 1, 5000);
  // Reserved 1600 (e·batches·size), nothing filled yet.
  EXPECT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 1600u);
  EXPECT_EQ(h.policy().pool_bytes(), 8400u);
  Result<Decision> r = h.policy().SetBudget(9000);  // from the pool only
  ASSERT_TRUE(r.ok());
  h.Apply(r.value(), 0);
  EXPECT_TRUE(r.value().evict.empty());
  EXPECT_EQ(h.policy().pool_bytes(), 7400u);
  r = h.policy().SetBudget(1000);  // pool 7400, then 600 of the unused grant
  h.Apply(r.value(), 0);
  EXPECT_EQ(h.policy().pool_bytes(), 0u);
  EXPECT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 1000u);
  EXPECT_TRUE(r.value().evict.empty());
  r = h.policy().SetBudget(2000);  // growing: to the pool
  h.Apply(r.value(), 0);
  EXPECT_TRUE(r.value().evict.empty());
  EXPECT_EQ(h.policy().pool_bytes(), 1000u);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  ReadAll(h, 1, Iota(16), 5000, 100);  // fills next: 1000 granted + 600 from the pool
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 1600u);
  const uint64_t pool = h.policy().pool_bytes();
  EXPECT_EQ(pool, 400u);
  r = h.policy().SetBudget(h.policy().budget() - pool - 600);  // the pool, then 6 of next
  h.Apply(r.value(), 0);
  EXPECT_EQ(r.value().evict.size(), 6u);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 1000u);
  for (ObjectId v : r.value().evict) EXPECT_FALSE(h.resident(v));
  // Next becomes cur; shrinking now evicts the cur samples read last first.
  h.BeginEpoch(1, 2, 9000);
  ASSERT_EQ(Snap(h.policy(), 1).cur_bytes, 1000u);
  std::vector<uint32_t> held;
  for (uint32_t x = 0; x < 16; ++x) {
    if (h.policy().epoch_regions()->Where(1, x) == Region::kCur) held.push_back(x);
  }
  ASSERT_EQ(held.size(), 10u);
  r = h.policy().SetBudget(h.policy().budget() - h.policy().pool_bytes() - 400);
  h.Apply(r.value(), 0);
  ASSERT_EQ(r.value().evict.size(), 4u);
  for (size_t i = 0; i < held.size(); ++i) {
    EXPECT_EQ(h.policy().epoch_regions()->Where(1, held[i]), i < 6 ? Region::kCur : Region::kNone) << held[i];
  }
  EXPECT_EQ(h.policy().pool_bytes(), 0u);
  EXPECT_LE(h.policy().resident_bytes(), h.policy().budget());
  // Down to 0: everything goes; back up: all of it is pool.
  r = h.policy().SetBudget(0);
  h.Apply(r.value(), 0);
  EXPECT_EQ(h.policy().resident_bytes(), 0u);
  EXPECT_TRUE(h.resident_set().empty());
  r = h.policy().SetBudget(10000);
  h.Apply(r.value(), 0);
  EXPECT_EQ(h.policy().pool_bytes(), 10000u);
}

TEST_F(Epochs, ShrinkEvictsTheTailBeforeNext) {
  Harness h(Make(10000, 0, /*tail=*/1));
  Add(h, 1, 9, ComputeFor(4));
  WarmUp(h, 1, 16, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  ReadAll(h, 1, Iota(16), 5000, 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 3, Iota(16)).ok());
  h.BeginEpoch(1, 2, 9000);
  for (uint32_t x = 0; x < 13; ++x) h.Read(1, x, 9001 + x);  // 13..15 stay in cur
  ASSERT_TRUE(h.policy().SetOrder(1, 4, Iota(16)).ok());
  h.BeginEpoch(1, 3, 9500);
  ASSERT_EQ(Snap(h.policy(), 1).tail_bytes, 300u);
  const uint64_t next = Snap(h.policy(), 1).next_bytes;
  const uint64_t unused = Snap(h.policy(), 1).granted_unused_bytes;
  Result<Decision> r = h.policy().SetBudget(h.policy().budget() - h.policy().pool_bytes() -
                                            unused - 200);
  ASSERT_TRUE(r.ok());
  h.Apply(r.value(), 0);
  EXPECT_EQ(Snap(h.policy(), 1).tail_bytes, 100u);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, next);
  EXPECT_EQ(r.value().evict.size(), 2u);
}

TEST_F(Epochs, ExpectedRemainingTimeIsEpochsLeftTimesEpochTime) {
  Harness h(Make(10000));
  Add(h, 1, 5, ComputeFor(4));
  Add(h, 2, 0, ComputeFor(4));  // epochs unknown
  EXPECT_EQ(ExpectedRemainingNs(Snap(h.policy(), 1)), 0u) << "T not measured yet";
  WarmUp(h, 1, 16, 100);  // T = 1600 ns
  h.BeginEpoch(1, 1, 5000);
  const JobSnapshot s = Snap(h.policy(), 1);
  EXPECT_EQ(s.epochs, 5u);
  EXPECT_EQ(s.epoch_time_ns, 1600u);
  EXPECT_EQ(ExpectedRemainingNs(s), 4u * 1600u);  // epochs 1..4, the current one whole
  EXPECT_EQ(ExpectedRemainingNs(Snap(h.policy(), 2)), 0u);
  JobSnapshot done = s;
  done.state = JobState::kDone;
  EXPECT_EQ(ExpectedRemainingNs(done), 0u);
}

TEST_F(Epochs, SameEventsSameDecisions) {
  auto run = [this]() {
    Harness h(Make(2000));
    Add(h, 1, 9, ComputeFor(4));
    Add(h, 2, 9, ComputeFor(4));
    WarmUp(h, 1, 16, 100);
    WarmUp(h, 2, 16, 200);
    EXPECT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
    EXPECT_TRUE(h.policy().SetOrder(2, 2, Reversed(16)).ok());
    h.BeginEpoch(1, 1, 5000);
    h.BeginEpoch(2, 1, 5000);
    std::vector<ObjectId> log;
    for (uint32_t x = 0; x < 16; ++x) {
      h.Read(1, x, 5001 + x);
      h.Read(2, 15 - x, 5001 + x);
      log.insert(log.end(), h.last.evict.begin(), h.last.evict.end());
    }
    return log;
  };
  const std::vector<ObjectId> a = run();
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, run());
}

}  // namespace
}  // namespace epochfs::cache
