// A restarted (re-attached) job's epoch restart, and the cache-need sum
// (seed 004): Policy::RestartEpoch and SumCacheNeed.
//
// Conventions as epoch_policy_test.cc: samples are 100 bytes, job J's sample x
// is object J*1000 + x, a miss costs 1000 ns, b = 4, one loader, and the
// compute hint sets e = 4 - compute/1000.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "epochfs/cache/cache_need.h"
#include "epochfs/cache/epoch_policy.h"
#include "policy_harness.h"

namespace epochfs::cache {
// Named, not anonymous: a unity build compiles this file with the others of its binary.
namespace restart_and_need_test {

using testing::Harness;
using testing::Iota;
using testing::Snap;
using testing::UniformSamples;

constexpr uint64_t kSize = 100;
constexpr uint64_t kLoad = 1000;

std::unique_ptr<Policy> Make(uint64_t budget) {
  EpochPolicyParams p;
  p.budget_bytes = budget;
  p.seed = 7;
  p.share_idle = false;
  return MakeEpochPolicy(p);
}

void AddJob(Harness& h, JobId id, uint32_t epochs, uint32_t e, uint32_t n = 16) {
  h.AddJob(JobSpec{id, "job" + std::to_string(id), 4, epochs, 1, (4 - e) * kLoad},
           UniformSamples(n, kSize, id * 1000));
}

void ReadRange(Harness& h, JobId id, uint32_t from, uint32_t to, uint64_t* now) {
  for (uint32_t x = from; x < to; ++x) h.Read(id, x, (*now += 100), kLoad);
}

// Warm-up epoch 0 read whole, orders 0..2 declared (identity), epoch 1 begun.
void WarmUpAndBeginOne(Harness& h, JobId id, uint64_t* now) {
  ASSERT_TRUE(h.policy().SetOrder(id, 0, Iota(16)).ok());
  ASSERT_TRUE(h.policy().SetOrder(id, 1, Iota(16)).ok());
  h.BeginEpoch(id, 0, *now);
  ReadRange(h, id, 0, 16, now);
  ASSERT_TRUE(h.policy().SetOrder(id, 2, Iota(16)).ok());
  h.BeginEpoch(id, 1, (*now += 100));
}

TEST(RestartEpoch, KeepsRegionsAndCountsReReadsForTheSameEpoch) {
  Harness h(Make(10000));
  AddJob(h, 1, 9, /*e=*/4);
  uint64_t now = 0;
  WarmUpAndBeginOne(h, 1, &now);
  ReadRange(h, 1, 0, 8, &now);  // half of epoch 1: 8 samples of epoch 2 enter next
  const JobSnapshot before = Snap(h.policy(), 1);
  ASSERT_EQ(before.state, JobState::kCaching);
  ASSERT_EQ(before.batch, 2u);
  ASSERT_EQ(before.next_bytes, 8 * kSize);
  const uint64_t pool = h.policy().pool_bytes();

  // The job's processes die; a restarted job re-attaches and reads epoch 1 again.
  ASSERT_TRUE(h.policy().RestartEpoch(1, now + 5000).ok());
  h.Check();
  JobSnapshot s = Snap(h.policy(), 1);
  EXPECT_EQ(s.epoch, 1u);
  EXPECT_EQ(s.batch, 0u);  // its progress through epoch 1 is forgotten
  EXPECT_EQ(s.next_bytes, before.next_bytes);  // and nothing it holds
  EXPECT_EQ(s.granted_unused_bytes, before.granted_unused_bytes);
  EXPECT_EQ(s.rank, before.rank);
  EXPECT_EQ(s.epoch_time_ns, before.epoch_time_ns);
  EXPECT_EQ(s.current.misses, before.current.misses);  // counters keep adding up
  EXPECT_EQ(h.policy().pool_bytes(), pool);

  now += 5000;
  ReadRange(h, 1, 0, 8, &now);  // re-reads: hits on next, counted as epoch 1 progress
  s = Snap(h.policy(), 1);
  EXPECT_EQ(s.batch, 2u);
  EXPECT_EQ(s.current.hits, 8u);
  ReadRange(h, 1, 8, 16, &now);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 16 * kSize);
  // Epoch 2 finds all of it in cur.
  h.BeginEpoch(1, 2, (now += 100));
  uint64_t hits = 0;
  for (uint32_t x = 0; x < 16; ++x) hits += h.Read(1, x, (now += 100), kLoad) ? 1 : 0;
  EXPECT_EQ(hits, 16u);
}

TEST(RestartEpoch, LastEpochDrainsOnlyAfterTheWholeRestartedEpoch) {
  Harness h(Make(10000));
  AddJob(h, 1, 2, /*e=*/4);
  uint64_t now = 0;
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(16)).ok());
  ASSERT_TRUE(h.policy().SetOrder(1, 1, Iota(16)).ok());
  h.BeginEpoch(1, 0, now);
  ReadRange(h, 1, 0, 16, &now);
  h.BeginEpoch(1, 1, (now += 100));
  ReadRange(h, 1, 0, 12, &now);
  ASSERT_EQ(Snap(h.policy(), 1).state, JobState::kLastEpoch);
  ASSERT_TRUE(h.policy().RestartEpoch(1, now).ok());
  ReadRange(h, 1, 0, 12, &now);  // without the restart this would finish the epoch early
  EXPECT_EQ(Snap(h.policy(), 1).state, JobState::kLastEpoch);
  ReadRange(h, 1, 12, 16, &now);
  EXPECT_EQ(Snap(h.policy(), 1).state, JobState::kDone);
  h.EndJob(1);
  EXPECT_EQ(h.policy().pool_bytes(), 10000u);
}

TEST(RestartEpoch, BeforeTheFirstEpochAndUnknownJobs) {
  Harness h(Make(10000));
  AddJob(h, 1, 3, 4);
  EXPECT_TRUE(h.policy().RestartEpoch(1, 10).ok());  // nothing begun: no-op
  EXPECT_FALSE(Snap(h.policy(), 1).started);
  EXPECT_EQ(h.policy().RestartEpoch(9, 10).code(), Code::kNotFound);
}

TEST(CacheNeed, SumsTheCachingJobsAndWarnsOverTheBudget) {
  Harness h(Make(2000));
  AddJob(h, 1, 9, /*e=*/4);
  AddJob(h, 2, 9, /*e=*/2);
  CacheNeed n = SumCacheNeed(h.policy());
  EXPECT_EQ(n.total_bytes, 0u);  // nobody measured yet
  EXPECT_TRUE(n.jobs.empty());
  EXPECT_FALSE(n.over);
  EXPECT_EQ(n.Warning(), "");

  uint64_t now = 0;
  WarmUpAndBeginOne(h, 1, &now);
  n = SumCacheNeed(h.policy());
  // need = e · batches · mean size = 4 · 4 · 100
  ASSERT_EQ(n.jobs.size(), 1u);
  EXPECT_EQ(n.jobs[0].need_bytes, 1600u);
  EXPECT_TRUE(Snap(h.policy(), 1).need_measured);
  EXPECT_EQ(Snap(h.policy(), 1).need_batches, 4u);
  EXPECT_FALSE(n.over);

  WarmUpAndBeginOne(h, 2, &now);
  n = SumCacheNeed(h.policy());
  EXPECT_EQ(n.total_bytes, 1600u + 2 * 4 * 100);
  EXPECT_EQ(n.budget_bytes, 2000u);
  EXPECT_TRUE(n.over);
  // The stats' line names no job (every user reads it); the log's does.
  const std::string w = n.Warning();
  EXPECT_NE(w.find("cache need 2400 bytes of 2 jobs exceeds the budget 2000"), std::string::npos) << w;
  EXPECT_EQ(w.find("job1"), std::string::npos) << w;
  const std::string log = n.LogLine();
  EXPECT_NE(log.find("2400"), std::string::npos) << log;
  EXPECT_NE(log.find("job1 1600"), std::string::npos) << log;
  EXPECT_NE(log.find("job2 800"), std::string::npos) << log;

  // A job that ends no longer needs anything.
  h.EndJob(1);
  n = SumCacheNeed(h.policy());
  EXPECT_EQ(n.total_bytes, 800u);
  EXPECT_FALSE(n.over);
}

}  // namespace restart_and_need_test
}  // namespace epochfs::cache
