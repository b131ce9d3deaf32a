// The "future" policy: keeps what the declared orders read soonest, step by
// step (Belady's MIN on one job), late joiners, unclaimed reads, shared
// datasets charged once, budget changes, and randomized multi-job schedules
// with the harness's contract checks after every event.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "epochfs/cache/future_policy.h"
#include "policy_harness.h"

namespace epochfs::cache {
// Named, not anonymous: a unity build compiles this file with the others of its binary.
namespace future_policy_test {

using testing::Harness;
using testing::Iota;
using testing::UniformSamples;

std::unique_ptr<Policy> Future(uint64_t budget) {
  FuturePolicyParams p;
  p.budget_bytes = budget;
  return MakeFuturePolicy(p);
}

JobSpec Spec(JobId id, uint32_t epochs, uint32_t batch = 1, uint64_t compute_ns = 0) {
  JobSpec s;
  s.id = id;
  s.name = "j" + std::to_string(id);
  s.batch_size = batch;
  s.epochs = epochs;
  s.compute_ns_per_batch = compute_ns;
  return s;
}

std::vector<uint32_t> Reversed(uint32_t n) {
  std::vector<uint32_t> v = Iota(n);
  std::reverse(v.begin(), v.end());
  return v;
}

// The rules and their messages: tests/unit/declarations. Here: the policy
// applies them, with the current and the next epoch's orders in use.
TEST(FuturePolicy, OrdersFollowTheDeclarationRules) {
  Harness h(Future(400));
  h.AddJob(Spec(1, 10), UniformSamples(10, 100, 1000));
  Policy& p = h.policy();
  EXPECT_EQ(p.SetOrder(1, 0, {0, 0}).code(), Code::kInvalidArgument);
  for (uint32_t k = 0; k < 4; ++k) ASSERT_TRUE(p.SetOrder(1, k, Iota(10)).ok()) << k;
  EXPECT_EQ(p.SetOrder(1, 4, Iota(10)).code(), Code::kInvalidArgument) << "a fifth pending order";
  h.BeginEpoch(1, 1, 1);
  EXPECT_EQ(p.SetOrder(1, 2, Reversed(10)).code(), Code::kInvalidArgument) << "next: in use";
  EXPECT_TRUE(p.SetOrder(1, 2, Iota(10)).ok()) << "the same again";
  EXPECT_TRUE(p.SetOrder(1, 3, Reversed(10)).ok()) << "two ahead: replaced";
  EXPECT_TRUE(p.SetOrder(1, 4, Iota(10)).ok());
  EXPECT_EQ(p.SetOrder(1, 5, Iota(10)).code(), Code::kInvalidArgument);
  EXPECT_EQ(p.SetOrder(1, 0, Reversed(10)).code(), Code::kInvalidArgument) << "ended";
  EXPECT_EQ(p.BeginEpoch(1, 0, 2).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(p.BeginEpoch(1, 10, 2).status().code(), Code::kInvalidArgument);
}

TEST(FuturePolicy, KeepsWhatTheNextEpochReadsFirst) {
  // 10 samples of 100 bytes, room for 4: epoch 1 hits 4 times (MIN's count;
  // which 4 of epoch 1 are held is spread over the epoch, docs/policy.md).
  Harness h(Future(400));
  h.AddJob(Spec(1, 2), UniformSamples(10, 100, 1000));
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(10)).ok());
  ASSERT_TRUE(h.policy().SetOrder(1, 1, Reversed(10)).ok());
  h.BeginEpoch(1, 0, 1);
  uint64_t t = 10;
  for (uint32_t x = 0; x < 10; ++x) h.Read(1, x, t += 1000);
  EXPECT_EQ(h.resident_set().size(), 4u);
  h.BeginEpoch(1, 1, t += 1000);
  int hits = 0;
  for (uint32_t x : Reversed(10)) hits += h.Read(1, x, t += 1000);
  EXPECT_EQ(hits, 4);
  const std::vector<JobSnapshot> jobs = h.policy().Jobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].current.hits, 4u);
  EXPECT_EQ(jobs[0].current.misses, 6u);
  EXPECT_EQ(jobs[0].previous.misses, 10u);
  // Both epochs, never reset (metrics' counters).
  EXPECT_EQ(jobs[0].total.hits, 4u);
  EXPECT_EQ(jobs[0].total.misses, 16u);
}

// A hit the daemon told at an open whose READ then needed the bytes again
// (one copy: the kernel lost its pages) is a refill in the job's counters,
// with the refill's wait; nothing else moves. A read of no job's: nothing.
TEST(FuturePolicy, AHitFoundToBeARefillIsCountedAsOne) {
  Harness h(Future(400));
  h.AddJob(Spec(1, 2), UniformSamples(10, 100, 1000));
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(10)).ok());
  ASSERT_TRUE(h.policy().SetOrder(1, 1, Reversed(10)).ok());
  h.BeginEpoch(1, 0, 1);
  uint64_t t = 10;
  for (uint32_t x = 0; x < 10; ++x) h.Read(1, x, t += 1000);
  h.BeginEpoch(1, 1, t += 1000);
  std::vector<uint32_t> hit;
  for (uint32_t x : Reversed(10)) {
    if (h.Read(1, x, t += 1000)) hit.push_back(x);
  }
  ASSERT_EQ(hit.size(), 4u);
  const std::set<ObjectId> resident = h.resident_set();
  Access a{1000 + hit[0], 100, 1, static_cast<int64_t>(hit[0]), t += 1000};
  a.wait_ns = 500;
  a.served = Access::Served::kRefill;
  const JobSnapshot before = h.policy().Jobs()[0];
  h.policy().OnRefilled(a);
  Access stranger = a;
  stranger.job = kNoJob;
  h.policy().OnRefilled(stranger);
  const JobSnapshot after = h.policy().Jobs()[0];
  EXPECT_EQ(after.current.hits, before.current.hits - 1);
  EXPECT_EQ(after.current.refills, before.current.refills + 1);
  EXPECT_EQ(after.current.misses, before.current.misses);
  EXPECT_EQ(after.current.reads(), before.current.reads()) << "one read, counted once";
  EXPECT_EQ(after.current.lower_wait_ns, before.current.lower_wait_ns + 500);
  EXPECT_EQ(after.total.hits, before.total.hits - 1);
  EXPECT_EQ(after.total.refills, before.total.refills + 1);
  EXPECT_EQ(h.resident_set(), resident) << "nothing decided";
  EXPECT_TRUE(h.policy().CheckInvariants().ok());
}

// Job 1 (slow: 100 us per read) reads a dataset twice the budget, forever;
// job 2 (fast: 1 us per read) joins late with a dataset that fits. Its reads
// come soonest, so it gets the space job 1 filled first.
TEST(FuturePolicy, ALateFastJobGetsHits) {
  {
    Harness h(Future(1000));
    h.AddJob(Spec(1, 20, 1, 100'000), UniformSamples(20, 100, 1000));
    ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(20)).ok());
    ASSERT_TRUE(h.policy().SetOrder(1, 1, Iota(20)).ok());
    h.BeginEpoch(1, 0, 1);
    uint64_t t = 10;
    for (uint32_t x = 0; x < 20; ++x) h.Read(1, x, t += 100'000);
    h.BeginEpoch(1, 1, t);
    ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(20)).ok());
    // Job 2 arrives; from now on job 1 reads one sample per 100 reads of job 2.
    h.AddJob(Spec(2, 4, 1, 1'000), UniformSamples(8, 100, 5000));
    ASSERT_TRUE(h.policy().SetOrder(2, 0, Iota(8)).ok());
    ASSERT_TRUE(h.policy().SetOrder(2, 1, Iota(8)).ok());
    h.BeginEpoch(2, 0, t);
    uint32_t pos1 = 0, epoch1 = 1;
    uint64_t hits2_after_warmup = 0;
    for (uint32_t e = 0; e < 4; ++e) {
      if (e > 0) {
        h.BeginEpoch(2, e, t);
        if (e + 1 < 4) {
          ASSERT_TRUE(h.policy().SetOrder(2, e + 1, Iota(8)).ok());
        }
      }
      for (uint32_t x = 0; x < 8; ++x) {
        const bool hit = h.Read(2, x, t += 1'000);
        if (e > 0) hits2_after_warmup += hit;
        if ((e * 8 + x) % 4 == 0) {  // job 1 goes on, slowly
          h.Read(1, pos1, t += 1);
          if (++pos1 == 20) {
            pos1 = 0;
            h.BeginEpoch(1, ++epoch1, t);
            ASSERT_TRUE(h.policy().SetOrder(1, epoch1 + 1, Iota(20)).ok());
          }
        }
      }
    }
    EXPECT_GE(hits2_after_warmup, 20u) << "of 24 reads after its first epoch";
  }
}

TEST(FuturePolicy, UnclaimedReadsUseIdleSpaceAndYieldToDeclaredOnes) {
  Harness h(Future(500));
  for (ObjectId o = 1; o <= 7; ++o) h.set_size(o, 100);
  // A plain reader (no job): cached LRU while nothing else wants the space.
  for (ObjectId o = 1; o <= 5; ++o) {
    EXPECT_FALSE(h.Touch(Access{o, 100, kNoJob, -1, o * 10}));
  }
  EXPECT_EQ(h.policy().resident_bytes(), 500u);
  EXPECT_TRUE(h.Touch(Access{1, 100, kNoJob, -1, 100}));  // hit; 2 is now the oldest
  EXPECT_FALSE(h.Touch(Access{6, 100, kNoJob, -1, 110}));
  EXPECT_FALSE(h.resident(2));
  EXPECT_TRUE(h.resident(1));
  // A job's declared samples displace unclaimed ones, never the reverse.
  h.AddJob(Spec(1, 2), UniformSamples(5, 100, 1000));
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(5)).ok());
  ASSERT_TRUE(h.policy().SetOrder(1, 1, Iota(5)).ok());
  h.BeginEpoch(1, 0, 200);
  for (uint32_t x = 0; x < 5; ++x) h.Read(1, x, 300 + x);
  for (ObjectId o = 1000; o < 1005; ++o) EXPECT_TRUE(h.resident(o)) << o;
  EXPECT_FALSE(h.Touch(Access{7, 100, kNoJob, -1, 400}));
  EXPECT_FALSE(h.resident(7)) << "an unclaimed read evicted a declared one";
}

TEST(FuturePolicy, SharedDatasetHeldOnceAndReportedOnce) {
  Harness h(Future(1000));
  for (JobId j : {1u, 2u}) {
    h.AddJob(Spec(j, 3), UniformSamples(10, 100, 1000));
    ASSERT_TRUE(h.policy().SetOrder(j, 0, Iota(10)).ok());
    ASSERT_TRUE(h.policy().SetOrder(j, 1, Reversed(10)).ok());
    h.BeginEpoch(j, 0, 1);
  }
  uint64_t t = 10, hits = 0;
  for (uint32_t x = 0; x < 10; ++x) {
    h.Read(1, x, t += 100);
    hits += h.Read(2, x, t += 100);
  }
  EXPECT_EQ(hits, 10u) << "job 2 reads what job 1 loaded";
  EXPECT_EQ(h.policy().resident_bytes(), 1000u);
  uint64_t by_jobs = 0;
  for (const JobSnapshot& s : h.policy().Jobs()) by_jobs += s.cur_bytes;
  EXPECT_EQ(by_jobs, 1000u) << "each object is filed under one job";
  h.EndJob(1);
  h.EndJob(2);
  EXPECT_EQ(h.policy().resident_bytes(), 1000u) << "unclaimed now, still useful to plain reads";
  EXPECT_TRUE(h.policy().Jobs().empty());
}

TEST(FuturePolicy, ShrinkingTheBudgetEvictsTheFurthestFirst) {
  Harness h(Future(1000));
  h.AddJob(Spec(1, 2), UniformSamples(10, 100, 1000));
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(10)).ok());
  ASSERT_TRUE(h.policy().SetOrder(1, 1, Reversed(10)).ok());
  h.BeginEpoch(1, 0, 1);
  for (uint32_t x = 0; x < 10; ++x) h.Read(1, x, 10 + x);
  h.BeginEpoch(1, 1, 100);  // now all 10 are read next in epoch 1's order
  Result<Decision> d = h.policy().SetBudget(300);
  ASSERT_TRUE(d.ok());
  h.Apply(d.value(), 0);
  EXPECT_EQ(h.resident_set(), (std::set<ObjectId>{1009, 1008, 1007}));
  EXPECT_EQ(h.policy().budget(), 300u);
}

// A file too large to cache whole is read in blocks (Access::file): each
// block is next read when its file is, and the file's first block in an
// epoch moves the job on, once.
TEST(FuturePolicy, BlocksFollowTheirFilesDeclaredFuture) {
  Harness h(Future(800));
  h.AddJob(Spec(1, 2), {{1000, 1200}, {1001, 100}, {1002, 100}});
  ASSERT_TRUE(h.policy().SetOrder(1, 0, {0, 1, 2}).ok());
  ASSERT_TRUE(h.policy().SetOrder(1, 1, {0, 1, 2}).ok());
  h.BeginEpoch(1, 0, 1);
  uint64_t t = 10;
  for (ObjectId b : {5000, 5001, 5002, 9000, 9001}) h.set_size(b, 400);
  for (ObjectId b : {5000, 5001, 5002}) {
    EXPECT_FALSE(h.Touch(Access{b, 400, 1, 0, t += 10, 1000}));
  }
  const JobSnapshot s = h.policy().Jobs().at(0);
  EXPECT_EQ(s.batch, 1u) << "a file's blocks are one read of the job";
  EXPECT_EQ(s.current.misses, 3u);
  EXPECT_EQ(h.policy().resident_bytes(), 800u);  // two of the three blocks
  // A read no job declared ranks after the blocks, which the job reads
  // first in its next epoch.
  EXPECT_FALSE(h.Touch(Access{9000, 400, kNoJob, -1, t += 10}));
  EXPECT_FALSE(h.resident(9000));
  EXPECT_EQ(h.policy().resident_bytes(), 800u);
  // The job ends: its blocks are nobody's now (filed again with the file),
  // and the next such read takes the place of the least recently used.
  h.EndJob(1);
  EXPECT_FALSE(h.Touch(Access{9001, 400, kNoJob, -1, t += 10}));
  EXPECT_TRUE(h.resident(9001));
  EXPECT_TRUE(h.policy().CheckInvariants().ok());
}

// fuse.no_open: the kernel's hits never reach the policy. A read at position p
// of the declared order then implies the reads before p - W (W = loaders x 2
// x batch): their next use moves to the next epoch, and they count as hits.
// Objects 0..4 are resident, read by the job without the policy hearing of
// it; its read of sample 8 must not take them for reads still to come.
TEST(FuturePolicy, AReadImpliesTheDeclaredReadsBeforeItWhenHitsAreNotSeen) {
  for (const bool implied : {false, true}) {
    FuturePolicyParams params;
    params.budget_bytes = 500;  // five of the ten samples
    params.implied_reads = implied;
    Harness h(MakeFuturePolicy(params));
    h.AddJob(Spec(1, 2), UniformSamples(10, 100, 1000));
    ASSERT_TRUE(h.policy().SetOrder(1, 0, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}).ok());
    ASSERT_TRUE(h.policy().SetOrder(1, 1, Reversed(10)).ok());
    h.BeginEpoch(1, 0, 1);
    uint64_t t = 10;
    for (ObjectId o = 1000; o < 1005; ++o) h.Touch(Access{o, 100, kNoJob, -1, t += 10});
    EXPECT_FALSE(h.Touch(Access{1008, 100, 1, 8, t += 10}));
    const JobSnapshot s = h.policy().Jobs().at(0);
    if (implied) {
      // Positions 0..5 read (8 - 2): 0..4 are next read in epoch 1, like
      // sample 8, which takes the place of one of them.
      EXPECT_EQ(s.current.hits, 6u);
      EXPECT_EQ(s.batch, 7u);
      EXPECT_TRUE(h.resident(1008));
      int kept = 0;
      for (ObjectId o = 1000; o < 1005; ++o) kept += h.resident(o);
      EXPECT_EQ(kept, 4);
    } else {
      // 0..4 look due in this epoch, before anything else: 8 is not admitted.
      EXPECT_EQ(s.current.hits, 0u);
      EXPECT_EQ(s.batch, 1u);
      EXPECT_FALSE(h.resident(1008));
    }
    // Implied once: a later read passes no position twice.
    EXPECT_FALSE(h.Touch(Access{1009, 100, 1, 9, t += 10}));
    EXPECT_EQ(h.policy().Jobs().at(0).current.hits, implied ? 7u : 0u);
    EXPECT_TRUE(h.policy().CheckInvariants().ok());
  }
}

// fuse.no_open, a hot epoch: no read reaches the policy at all. The job's
// progress reports (Policy::Progress) then count its reads before the
// reported position - W as hits, and the next epoch the rest of the one it
// ended; with implied reads off they change nothing.
TEST(FuturePolicy, ProgressReportsCountTheHitsTheCacheDoesNotSee) {
  for (const bool implied : {false, true}) {
    FuturePolicyParams params;
    params.budget_bytes = 1000;  // all ten samples
    params.implied_reads = implied;
    Harness h(MakeFuturePolicy(params));
    h.AddJob(Spec(1, 3), UniformSamples(10, 100, 1000));  // W = 1 x 2 x 1
    ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(10)).ok());
    ASSERT_TRUE(h.policy().SetOrder(1, 1, Reversed(10)).ok());
    h.BeginEpoch(1, 0, 1);
    uint64_t t = 10;
    for (ObjectId o = 1000; o < 1010; ++o) {
      EXPECT_FALSE(h.Touch(Access{o, 100, 1, static_cast<int64_t>(o - 1000), t += 10}));
    }
    ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(10)).ok());
    h.BeginEpoch(1, 1, t += 10);
    // Epoch 1 is hot: the kernel serves it; only reports arrive.
    h.policy().Progress(1, 1, 6, t += 10);
    EXPECT_EQ(h.policy().Jobs().at(0).current.hits, implied ? 4u : 0u);
    EXPECT_EQ(h.policy().Jobs().at(0).batch, implied ? 4u : 0u);
    h.policy().Progress(1, 1, 6, t += 10);  // again: nothing twice
    h.policy().Progress(1, 0, 10, t += 10);  // a past epoch: ignored
    h.policy().Progress(1, 7, 10, t += 10);  // an unknown epoch: ignored
    h.policy().Progress(9, 1, 10, t += 10);  // an unknown job: ignored
    EXPECT_EQ(h.policy().Jobs().at(0).current.hits, implied ? 4u : 0u);
    h.policy().Progress(1, 1, 10, t += 10);
    EXPECT_EQ(h.policy().Jobs().at(0).current.hits, implied ? 8u : 0u);
    // Epoch 2 begins: the last W samples of epoch 1 were read too.
    h.BeginEpoch(1, 2, t += 10);
    const JobSnapshot s = h.policy().Jobs().at(0);
    EXPECT_EQ(s.previous.epoch, 1u);
    EXPECT_EQ(s.previous.hits, implied ? 10u : 0u);
    EXPECT_EQ(s.previous.misses, 0u);
    EXPECT_EQ(s.total.hits, implied ? 10u : 0u);
    // Everything stays resident and next read in epoch 2.
    for (ObjectId o = 1000; o < 1010; ++o) EXPECT_TRUE(h.resident(o));
    EXPECT_TRUE(h.policy().CheckInvariants().ok());
  }
}

// BytesLeft orders the readers' loads that wait for a read slot
// (lower.read_slots): what each job has left to read by its declaration.
TEST(FuturePolicy, BytesLeftIsWhatTheDeclaredEpochsHaveLeftToRead) {
  Harness h(Future(1000));
  h.AddJob(Spec(1, 3), UniformSamples(10, 100, 1000));
  EXPECT_EQ(h.policy().read_order()->BytesLeft(1), 3u * 10 * 100);  // not started: every epoch
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(10)).ok());
  h.BeginEpoch(1, 0, 1);
  uint64_t t = 10;
  for (uint32_t x = 0; x < 4; ++x) h.Read(1, x, t += 1000);
  EXPECT_EQ(h.policy().read_order()->BytesLeft(1), (6u + 2 * 10) * 100);
  ASSERT_TRUE(h.policy().SetOrder(1, 1, Iota(10)).ok());
  h.BeginEpoch(1, 1, t += 1000);
  EXPECT_EQ(h.policy().read_order()->BytesLeft(1), (10u + 10) * 100);
  h.AddJob(Spec(2, 0), UniformSamples(10, 100, 2000));  // epochs unknown: last in line
  EXPECT_EQ(h.policy().read_order()->BytesLeft(2), Policy::kNoLeft);
  EXPECT_EQ(h.policy().read_order()->BytesLeft(kNoJob), 0u);  // unregistered readers: first
  EXPECT_EQ(h.policy().read_order()->BytesLeft(9), 0u);
  // Policies without a declared future keep the order the loads asked in.
  EXPECT_EQ(MakeLruPolicy(1000)->read_order(), nullptr);  // no order: every key 0
}

// Jobs over one dataset share the least key, all pairs of them (a load for
// one is a hit for the others): none is held back behind another.
TEST(FuturePolicy, JobsSharingADatasetShareTheLeastBytesLeftAndAreSharers) {
  Harness h(Future(1000));
  h.AddJob(Spec(1, 9), UniformSamples(10, 100, 1000));
  h.AddJob(Spec(2, 2), UniformSamples(10, 100, 1000));  // the same 10 objects
  h.AddJob(Spec(3, 5), UniformSamples(10, 100, 1000));
  h.AddJob(Spec(4, 1), UniformSamples(10, 100, 5000));  // another dataset
  for (JobId j : {1u, 2u, 3u}) EXPECT_EQ(h.policy().read_order()->BytesLeft(j), 2u * 10 * 100) << j;
  EXPECT_EQ(h.policy().read_order()->BytesLeft(4), 1u * 10 * 100);
  // Their loads are not ordered against each other (ReadSlots).
  EXPECT_EQ(h.policy().read_order()->Sharers(1), (std::vector<JobId>{2, 3}));
  EXPECT_EQ(h.policy().read_order()->Sharers(3), (std::vector<JobId>{1, 2}));
  EXPECT_TRUE(h.policy().read_order()->Sharers(4).empty());
  EXPECT_TRUE(h.policy().read_order()->Sharers(9).empty());  // unknown
  ASSERT_TRUE(h.policy().EndJob(2).ok());  // the least one ends: the next least is shared
  for (JobId j : {1u, 3u}) EXPECT_EQ(h.policy().read_order()->BytesLeft(j), 5u * 10 * 100) << j;
  EXPECT_EQ(h.policy().read_order()->Sharers(1), (std::vector<JobId>{3}));
}

// Two jobs read datasets of their own at the same pace, each four times the
// budget's share. Job 1's loader waits for storage all the time (each read
// waits as long as the time between its reads: u = 1); job 2's never waits
// (its compute sets its pace: u = 0). Weighing hits, job 2's objects rank
// as read kMinWorth-fold... later, so job 1 gets the cache and its hits;
// without, they split it.
struct WorthRun {
  uint64_t bytes1 = 0, bytes2 = 0, hits1 = 0, hits2 = 0;
  double worth1 = 0, worth2 = 0;
};
WorthRun RunWorth(bool weigh) {
  FuturePolicyParams p;
  p.budget_bytes = 3200;
  p.weigh_hits = weigh;
  Harness h(MakeFuturePolicy(p));
  h.AddJob(Spec(1, 2), UniformSamples(64, 100, 1000));
  h.AddJob(Spec(2, 2), UniformSamples(64, 100, 5000));
  for (JobId j : {1u, 2u}) {
    EXPECT_TRUE(h.policy().SetOrder(j, 0, Iota(64)).ok());
    EXPECT_TRUE(h.policy().SetOrder(j, 1, Iota(64)).ok());
    h.BeginEpoch(j, 0, 1);
  }
  uint64_t t = 10;
  WorthRun r;
  for (uint32_t epoch = 0; epoch < 2; ++epoch) {
    if (epoch == 1) {
      for (const JobSnapshot& s : h.policy().Jobs()) {
        (s.id == 1 ? r.bytes1 : r.bytes2) = s.cur_bytes;
        (s.id == 1 ? r.worth1 : r.worth2) = s.hit_worth;
      }
      for (JobId j : {1u, 2u}) h.BeginEpoch(j, 1, t);
    }
    for (uint32_t x = 0; x < 64; ++x) {
      Access a1{1000 + x, 100, 1, x, t += 1000};
      a1.wait_ns = 2000;
      const bool hit1 = h.Touch(a1);
      Access a2{5000 + x, 100, 2, x, t += 1000};
      const bool hit2 = h.Touch(a2);
      if (epoch == 1) {
        r.hits1 += hit1;
        r.hits2 += hit2;
      }
    }
  }
  return r;
}

TEST(FuturePolicy, WeighingHitsGivesTheCacheToTheJobWaitingOnStorage) {
  const WorthRun on = RunWorth(true);
  EXPECT_DOUBLE_EQ(on.worth1, 1.0);
  EXPECT_LT(on.worth2, 0.5);
  EXPECT_GE(on.worth2, 0.25);
  EXPECT_EQ(on.bytes1 + on.bytes2, 3200u);
  EXPECT_GE(on.bytes1, 2 * on.bytes2);
  EXPECT_GE(on.hits1, 2 * on.hits2);

  const WorthRun off = RunWorth(false);  // a hit is a hit: the same pace, the same share
  EXPECT_DOUBLE_EQ(off.worth1, 1.0);
  EXPECT_DOUBLE_EQ(off.worth2, 1.0);
  EXPECT_LE(off.bytes1, 2 * off.bytes2);
  EXPECT_LE(off.bytes2, 2 * off.bytes1);
  EXPECT_LT(off.hits1 + 4, on.hits1) << off.hits1 << " " << off.hits2 << " " << off.bytes1;
}

TEST(FuturePolicy, RefusesWhatTheEpochPolicyRefuses) {
  std::unique_ptr<Policy> p = Future(1000);
  EXPECT_EQ(p->AddJob(Spec(0, 2)).code(), Code::kInvalidArgument);
  ASSERT_TRUE(p->AddJob(Spec(1, 2)).ok());
  EXPECT_EQ(p->AddJob(Spec(1, 2)).code(), Code::kExists);
  EXPECT_EQ(p->SetOrder(1, 0, {0}).code(), Code::kInvalidArgument);  // no samples yet
  EXPECT_EQ(p->SetSamples(1, {}).code(), Code::kInvalidArgument);
  ASSERT_TRUE(p->SetSamples(1, UniformSamples(3, 10, 1)).ok());
  EXPECT_EQ(p->SetOrder(1, 0, {0, 3}).code(), Code::kInvalidArgument);
  EXPECT_EQ(p->SetOrder(1, 0, {0, 0}).code(), Code::kInvalidArgument);
  EXPECT_EQ(p->SetOrder(1, 2, {0}).code(), Code::kInvalidArgument);  // 2 epochs
  EXPECT_EQ(p->SetOrder(1, 0, {}).code(), Code::kInvalidArgument);
  ASSERT_TRUE(p->SetOrder(1, 0, {2, 1, 0}).ok());
  EXPECT_EQ(p->SetSamples(1, UniformSamples(3, 10, 1)).code(), Code::kBusy);
  ASSERT_TRUE(p->BeginEpoch(1, 1, 5).ok());
  EXPECT_EQ(p->SetOrder(1, 0, {0}).code(), Code::kInvalidArgument);  // over
  EXPECT_EQ(p->BeginEpoch(1, 0, 6).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(p->EndJob(7).status().code(), Code::kNotFound);
  EXPECT_EQ(p->RestartEpoch(7, 1).code(), Code::kNotFound);
}

// Prefetch: the hints are the job's next unread samples in its declared
// order; a prefetched object is held without moving the job (its read later
// is a hit, counted then).
TEST(FuturePolicyPrefetch, HintsFollowTheDeclaredOrderAndDoNotMoveTheJob) {
  Harness h(Future(1000));  // room for all 10
  h.AddJob(Spec(1, 2), UniformSamples(10, 100, 1000));
  EXPECT_TRUE(h.policy().prefetching()->PrefetchHints(4, 1, nullptr, {}).empty())
      << "no order declared yet";
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Reversed(10)).ok());
  std::vector<PrefetchHint> hints = h.policy().prefetching()->PrefetchHints(4, 1, nullptr, {});
  ASSERT_EQ(hints.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(hints[i].sample, 9 - i);
    EXPECT_EQ(hints[i].job, 1u);
  }
  // skip: what the caller has in flight
  hints = h.policy().prefetching()->PrefetchHints(2, 1, [](ObjectId o) { return o == 1009; }, {});
  ASSERT_EQ(hints.size(), 2u);
  EXPECT_EQ(hints[0].sample, 8u);
  EXPECT_EQ(h.Prefetch(2), 1009u);
  EXPECT_EQ(h.Prefetch(3), 1008u);
  EXPECT_EQ(h.Prefetch(4), 1007u);
  const JobSnapshot before = h.policy().Jobs().at(0);
  EXPECT_EQ(before.batch, 0u);
  EXPECT_EQ(before.current.hits + before.current.misses, 0u);
  h.BeginEpoch(1, 0, 5);
  EXPECT_TRUE(h.Read(1, 9, 10));
  EXPECT_TRUE(h.Read(1, 8, 11));
  // Read out of order: 6 before 7. The hints start after what was read.
  EXPECT_FALSE(h.Read(1, 6, 12));
  hints = h.policy().prefetching()->PrefetchHints(3, 13, nullptr, {});
  ASSERT_EQ(hints.size(), 3u);
  EXPECT_EQ(hints[0].sample, 5u);  // 7 is resident, 6 was read
  EXPECT_EQ(hints[1].sample, 4u);
  const JobSnapshot after = h.policy().Jobs().at(0);
  EXPECT_EQ(after.current.hits, 2u);
  EXPECT_EQ(after.current.misses, 1u);
}

// Attributes ahead: StatHints names the declared files in reading order that
// PrefetchHints would not load now: all of them under a budget too small for
// any, none of those a load ahead is hinted for.
TEST(FuturePolicyPrefetch, StatHintsAreTheDeclaredFilesNotLoadedAhead) {
  Harness tiny(Future(50));  // no sample (100 bytes) fits
  tiny.AddJob(Spec(1, 2), UniformSamples(10, 100, 1000));
  Prefetching& pt = *tiny.policy().prefetching();
  EXPECT_TRUE(pt.StatHints(4, 1, nullptr, {}).empty()) << "no order declared yet";
  ASSERT_TRUE(tiny.policy().SetOrder(1, 0, Reversed(10)).ok());
  EXPECT_TRUE(pt.PrefetchHints(4, 1, nullptr, {}).empty());
  std::vector<PrefetchHint> stats = pt.StatHints(4, 1, [](ObjectId o) { return o == 1008; }, {});
  ASSERT_EQ(stats.size(), 4u);
  const uint32_t want[] = {9, 7, 6, 5};  // 8 skipped
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(stats[i].sample, want[i]) << i;

  Harness roomy(Future(1000));  // room for all 10
  roomy.AddJob(Spec(1, 2), UniformSamples(10, 100, 1000));
  ASSERT_TRUE(roomy.policy().SetOrder(1, 0, Reversed(10)).ok());
  Prefetching& pr = *roomy.policy().prefetching();
  const std::vector<PrefetchHint> loads = pr.PrefetchHints(4, 1, nullptr, {});
  ASSERT_FALSE(loads.empty());
  for (const PrefetchHint& s : pr.StatHints(4, 1, nullptr, {})) {
    for (const PrefetchHint& l : loads) EXPECT_NE(s.object, l.object) << s.sample;
  }
}

// With order_jobs (lower.read_slots): the hints of the job first in line (the
// smallest BytesLeft) come first; without it, the soonest reads across jobs.
TEST(FuturePolicyPrefetch, WithOrderedJobsTheJobFirstInLineIsPrefetchedFirst) {
  for (bool ordered : {false, true}) {
    FuturePolicyParams p;
    p.budget_bytes = 10'000;
    p.order_jobs = ordered;
    Harness h(MakeFuturePolicy(p));
    // Job 1: 5 epochs of 10 (far from its end), fast (1 us per sample).
    // Job 2: 1 epoch of 10 (near its end), slow (1 ms per sample).
    h.AddJob(Spec(1, 5, 1, 1'000), UniformSamples(10, 100, 1000));
    h.AddJob(Spec(2, 1, 1, 1'000'000), UniformSamples(10, 100, 2000));
    ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(10)).ok());
    ASSERT_TRUE(h.policy().SetOrder(2, 0, Iota(10)).ok());
    h.BeginEpoch(1, 0, 1);
    h.BeginEpoch(2, 0, 1);
    ASSERT_LT(h.policy().read_order()->BytesLeft(2), h.policy().read_order()->BytesLeft(1));
    std::vector<PrefetchHint> hints = h.policy().prefetching()->PrefetchHints(4, 2, nullptr, {});
    ASSERT_EQ(hints.size(), 4u) << ordered;
    const auto of_job_2 = std::count_if(hints.begin(), hints.end(),
                                        [](const PrefetchHint& x) { return x.job == 2; });
    // Unordered: the fast job's next three and the slow one's first (due now too).
    EXPECT_EQ(of_job_2, ordered ? 4 : 1) << ordered;
  }
}

// With the budget full of reads that come sooner, nothing is worth loading;
// once a held object's next read moves to the next epoch, the current
// epoch's next unread sample is.
TEST(FuturePolicyPrefetch, StopsWhereTheCacheHoldsSoonerReads) {
  Harness h(Future(400));  // room for 4 of 10
  h.AddJob(Spec(1, 2), UniformSamples(10, 100, 1000));
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(10)).ok());
  ASSERT_TRUE(h.policy().SetOrder(1, 1, Iota(10)).ok());
  h.BeginEpoch(1, 0, 1);
  for (uint64_t t = 2; t < 6; ++t) EXPECT_NE(h.Prefetch(t), 0u);
  EXPECT_EQ(h.resident_set(), (std::set<ObjectId>{1000, 1001, 1002, 1003}));
  EXPECT_TRUE(h.policy().prefetching()->PrefetchHints(4, 7, nullptr, {}).empty());
  EXPECT_TRUE(h.Read(1, 0, 8));
  EXPECT_EQ(h.Prefetch(9), 1004u);
  EXPECT_FALSE(h.resident(1000)) << "read again only next epoch: the first to go";
}

// Two hints never count on the same victim: with the budget full, a hint is
// given only if OnPrefetched would still admit it once the hints before it,
// and the prefetches in flight, have landed. Here only the furthest resident
// (sample 9) is worth less than the next unread samples: one hint, and none
// while that one is in flight.
TEST(FuturePolicyPrefetch, HintsAreThoseStillAdmittedOnceTheOnesBeforeThemLand) {
  Harness h(Future(400));  // room for 4 of 10
  h.AddJob(Spec(1, 2), UniformSamples(10, 100, 1000));
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(10)).ok());
  h.BeginEpoch(1, 0, 1);
  EXPECT_FALSE(h.Read(1, 0, 2));
  for (uint32_t x : {9u, 1u, 2u, 3u}) {
    const Access a{1000 + x, 100, 1, static_cast<int64_t>(x), 3};
    Decision d = h.policy().prefetching()->OnPrefetched(a, 1);
    h.Apply(d, a.object);
  }
  ASSERT_EQ(h.resident_set(), (std::set<ObjectId>{1009, 1001, 1002, 1003}));
  std::vector<PrefetchHint> hints = h.policy().prefetching()->PrefetchHints(4, 4, nullptr, {});
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_EQ(hints[0].sample, 4u);
  const std::vector<PrefetchHint> loading = hints;
  EXPECT_TRUE(h.policy()
                  .prefetching()
                  ->PrefetchHints(4, 4, [](ObjectId o) { return o == 1004; }, loading)
                  .empty());
  // Every hint is admitted when it lands; nothing was disturbed by asking.
  EXPECT_EQ(h.Prefetch(5), 1004u);
  EXPECT_FALSE(h.resident(1009));
  EXPECT_TRUE(h.policy().prefetching()->PrefetchHints(4, 6, nullptr, {}).empty());
  EXPECT_TRUE(h.Read(1, 1, 7));  // 1001 leaves (no next use): room for one more
  hints = h.policy().prefetching()->PrefetchHints(4, 8, nullptr, {});
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_EQ(hints[0].sample, 5u);
}

// The prefetch rule: a load ahead displaces only objects read after it.
// Sample 5 (390 bytes) is held; sample 6 (20 bytes) comes right after it.
// With requests costing more than those bytes (request_bytes 1000), the
// size-weighed rank of a miss would evict the big sample 5 for the small 6;
// a prefetch may not: 5 is read first, and evicting it would cost a load.
TEST(FuturePolicyPrefetch, APrefetchThatWouldDisplaceASoonerReadIsNotMade) {
  FuturePolicyParams p;
  p.budget_bytes = 400;
  p.request_bytes = 1000;
  Harness h(MakeFuturePolicy(p));
  std::vector<SampleRef> samples = UniformSamples(10, 100, 1000);
  samples[5].size = 390;
  samples[6].size = 20;
  h.AddJob(Spec(1, 1), samples);
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(10)).ok());
  h.BeginEpoch(1, 0, 1);
  Prefetching& pf = *h.policy().prefetching();
  Decision d = pf.OnPrefetched(Access{1005, 390, 1, 5, 2}, 1);
  h.Apply(d, 1005);
  ASSERT_TRUE(h.resident(1005));
  // Samples 0-4 in flight (skipped): the next hints would be 6, 7, ... and
  // each needs sample 5's space, read before any of them.
  auto in_flight = [](ObjectId o) { return o < 1005; };
  EXPECT_TRUE(pf.PrefetchHints(4, 3, in_flight, {}).empty());
  // Landing anyway (a hint asked earlier), sample 6 is not admitted and
  // sample 5 stays.
  d = pf.OnPrefetched(Access{1006, 20, 1, 6, 4}, 1);
  EXPECT_FALSE(d.admit);
  EXPECT_TRUE(d.evict.empty());
  h.Apply(d, 1006);
  EXPECT_TRUE(h.resident(1005));
  EXPECT_FALSE(h.resident(1006));
  // Sample 4 is read before sample 5: its prefetch may take 5's space.
  d = pf.OnPrefetched(Access{1004, 100, 1, 4, 5}, 1);
  EXPECT_TRUE(d.admit);
  EXPECT_EQ(d.evict, std::vector<ObjectId>{1005});
  h.Apply(d, 1004);
}

// Waste pulls the prefetch depth down: every object loaded ahead that
// leaves the cache unread halves how many may wait unread at once; each
// one read lets one more.
TEST(FuturePolicyPrefetch, WasteLowersTheDepth) {
  Harness h(Future(100'000));  // room for everything
  h.AddJob(Spec(1, 2), UniformSamples(40, 100, 1000));
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(40)).ok());
  h.BeginEpoch(1, 0, 1);
  Prefetching& pf = *h.policy().prefetching();
  EXPECT_EQ(pf.PrefetchHints(8, 2, nullptr, {}).size(), 8u);
  uint64_t t = 2;
  for (int round = 0; round < 10; ++round) {  // 10 wasted: 1024 -> 1
    ASSERT_NE(h.Prefetch(++t), 0u);
    Result<Decision> d = h.policy().SetBudget(0);  // evicted unread
    ASSERT_TRUE(d.ok());
    h.Apply(d.value(), 0);
    ASSERT_TRUE(h.policy().SetBudget(100'000).ok());
  }
  EXPECT_EQ(pf.PrefetchHints(8, ++t, nullptr, {}).size(), 1u);
  const ObjectId first = h.Prefetch(++t);
  ASSERT_EQ(first, 1000u);
  EXPECT_TRUE(pf.PrefetchHints(8, ++t, nullptr, {}).empty()) << "one unread already";
  EXPECT_TRUE(h.Read(1, 0, ++t));  // it paid: depth 2
  EXPECT_EQ(pf.PrefetchHints(8, ++t, nullptr, {}).size(), 2u);
}

TEST(FuturePolicyPrefetch, PoliciesWithoutADeclaredFutureGiveNoHints) {
  Harness h(MakeLruPolicy(1000));
  h.AddJob(Spec(1, 2), UniformSamples(10, 100, 1000));
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(10)).ok());
  EXPECT_EQ(h.policy().prefetching(), nullptr);  // so no hints, and nothing admitted ahead
  EXPECT_EQ(h.policy().read_order(), nullptr);
  EXPECT_EQ(h.Prefetch(1), 0u);
}

// Randomized schedules: jobs (some sharing a dataset, some the ranks of one
// distributed run: disjoint shards of one shuffle per epoch) come and go, read
// their declared orders interleaved at different paces with varied sizes, with
// unclaimed reads, store drops, restarts and budget changes in between. The
// harness checks the contract after every event; the digest shows the same
// schedule gives the same decisions.
uint64_t RandomRun(uint64_t seed, bool prefetch, uint64_t* hits_out, uint64_t* prefetched_out) {
  std::mt19937_64 rng(seed);
  Harness h(Future(20'000));
  uint64_t declined = 0;  // of the hints that landed together (PrefetchAll)
  struct J {
    JobId id = 0;
    uint32_t n = 0, epochs = 0, epoch = 0, pos = 0;
    std::vector<std::vector<uint32_t>> orders;
    bool live = true;
  };
  std::vector<J> jobs;
  std::vector<SampleRef> shared;
  for (uint32_t i = 0; i < 60; ++i) shared.push_back({500'000 + i, 50 + rng() % 700});
  JobId next_id = 1;
  uint64_t t = 1, hits = 0;
  auto order = [&](uint32_t n) {
    std::vector<uint32_t> o = Iota(n);
    std::shuffle(o.begin(), o.end(), rng);
    if (rng() % 4 == 0) o.resize(n / 2 + 1);  // a subset
    return o;
  };
  auto add = [&] {
    J j;
    j.id = next_id++;
    j.epochs = static_cast<uint32_t>(2 + rng() % 4);
    std::vector<SampleRef> samples;
    if (rng() % 2) {
      samples = shared;
    } else {
      j.n = 20 + static_cast<uint32_t>(rng() % 60);
      for (uint32_t i = 0; i < j.n; ++i) samples.push_back({j.id * 1000 + i, 50 + rng() % 900});
    }
    j.n = static_cast<uint32_t>(samples.size());
    h.AddJob(Spec(j.id, j.epochs, 1 + rng() % 4), samples);
    for (uint32_t e = 0; e < j.epochs; ++e) j.orders.push_back(order(j.n));
    EXPECT_TRUE(h.policy().SetOrder(j.id, 0, j.orders[0]).ok());
    EXPECT_TRUE(h.policy().SetOrder(j.id, 1, j.orders[1]).ok());
    h.BeginEpoch(j.id, 0, t);
    jobs.push_back(j);
  };
  // A distributed run: R ranks over the shared dataset; each epoch one
  // shuffle, rank k reading positions k, k+R, ... (DistributedSampler).
  auto add_run = [&] {
    const uint32_t ranks = 2 + static_cast<uint32_t>(rng() % 2);
    const uint32_t epochs = static_cast<uint32_t>(2 + rng() % 3);
    std::vector<std::vector<uint32_t>> shuffles;
    for (uint32_t e = 0; e < epochs; ++e) {
      shuffles.push_back(Iota(static_cast<uint32_t>(shared.size())));
      std::shuffle(shuffles.back().begin(), shuffles.back().end(), rng);
    }
    const uint32_t loaders = 1 + rng() % 4;
    for (uint32_t k = 0; k < ranks; ++k) {
      J j;
      j.id = next_id++;
      j.epochs = epochs;
      j.n = static_cast<uint32_t>(shared.size());
      h.AddJob(Spec(j.id, j.epochs, loaders), shared);
      for (uint32_t e = 0; e < epochs; ++e) {
        std::vector<uint32_t> shard;
        for (size_t i = k; i < shuffles[e].size(); i += ranks) shard.push_back(shuffles[e][i]);
        j.orders.push_back(shard);
      }
      EXPECT_TRUE(h.policy().SetOrder(j.id, 0, j.orders[0]).ok());
      EXPECT_TRUE(h.policy().SetOrder(j.id, 1, j.orders[1]).ok());
      h.BeginEpoch(j.id, 0, t);
      jobs.push_back(j);
    }
  };
  for (int i = 0; i < 3; ++i) add();
  if (seed % 2 == 0) add_run();
  for (int step = 0; step < 6000; ++step) {
    t += 1 + rng() % 1000;
    const uint64_t r = rng() % 100;
    if (r < 2 && jobs.size() < 8) {
      add();
    } else if (r < 3 && jobs.size() < 6) {
      add_run();
    } else if (r < 4) {
      const ObjectId o = 900'000 + rng() % 50;
      h.set_size(o, 50 + o % 500);
      h.Touch(Access{o, 50 + o % 500, kNoJob, -1, t});
    } else if (r < 5 && !h.resident_set().empty()) {
      auto it = h.resident_set().begin();
      std::advance(it, static_cast<long>(rng() % h.resident_set().size()));
      h.Drop(*it);
    } else if (r < 6) {
      Result<Decision> d = h.policy().SetBudget(5'000 + rng() % 30'000);
      EXPECT_TRUE(d.ok());
      h.Apply(d.value(), 0);
    } else if (prefetch && r >= 7 && r < 22) {
      if (rng() % 2 == 0) {
        if (h.Prefetch(t, 1 + rng() % 8) != 0) ++*prefetched_out;
      } else {
        *prefetched_out += h.PrefetchAll(t, 1 + rng() % 8, &declined);
      }
    } else if (r < 7) {
      for (J& j : jobs) {
        if (j.live && rng() % 3 == 0) {
          EXPECT_TRUE(h.policy().RestartEpoch(j.id, t).ok());
          j.pos = 0;
        }
      }
    } else {
      // a live job reads on; faster jobs (lower ids mod 3) more often
      std::vector<size_t> live;
      for (size_t i = 0; i < jobs.size(); ++i) {
        if (jobs[i].live) {
          for (uint32_t k = 0; k <= (jobs[i].id % 3); ++k) live.push_back(i);
        }
      }
      if (live.empty()) {
        add();
        continue;
      }
      J& j = jobs[live[rng() % live.size()]];
      const std::vector<uint32_t>& o = j.orders[j.epoch];
      hits += h.Read(j.id, o[j.pos], t);
      if (++j.pos == o.size()) {
        j.pos = 0;
        if (++j.epoch == j.epochs) {
          j.live = false;
          h.EndJob(j.id);
        } else {
          h.BeginEpoch(j.id, j.epoch, t);
          if (j.epoch + 1 < j.epochs) {
            EXPECT_TRUE(h.policy().SetOrder(j.id, j.epoch + 1, j.orders[j.epoch + 1]).ok());
          }
        }
      }
    }
    if (::testing::Test::HasFailure()) break;
  }
  *hits_out = hits;
  // The hints account for each other and rarely miss: only the groups'
  // approximation of the least-worth object (size classes) separates them
  // from OnMiss's decisions (here 0-1 in ~1500). Before they did, one in
  // six or seven was declined.
  if (prefetch) {
    EXPECT_LE(declined * 100, *prefetched_out) << declined << " hints declined when they landed";
  }
  return h.digest;
}

class FuturePolicyRandom : public ::testing::TestWithParam<bool> {};

TEST_P(FuturePolicyRandom, ContractHoldsAndDecisionsAreDeterministic) {
  const bool prefetch = GetParam();
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    uint64_t hits1 = 0, hits2 = 0, prefetched1 = 0, prefetched2 = 0;
    const uint64_t a = RandomRun(seed, prefetch, &hits1, &prefetched1);
    const uint64_t b = RandomRun(seed, prefetch, &hits2, &prefetched2);
    EXPECT_EQ(prefetched1, prefetched2);
    if (prefetch) {
      EXPECT_GT(prefetched1, 100u) << "nothing was prefetched";
    }
    EXPECT_EQ(a, b);
    EXPECT_EQ(hits1, hits2);
    EXPECT_GT(hits1, 100u) << "the schedule never hit: the test tests nothing";
    if (HasFailure()) break;
  }
}

// Without and with prefetch steps (the daemon's, between the reads).
INSTANTIATE_TEST_SUITE_P(FuturePolicy, FuturePolicyRandom, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "WithPrefetch" : "NoPrefetch";
                         });

}  // namespace future_policy_test
}  // namespace epochfs::cache
