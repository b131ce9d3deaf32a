// The epoch policy's shared region (EpochPolicyParams::share_idle): reads no
// job claims are cached LRU in the idle part of the free pool, and every grant
// to a job reclaims that space first (docs/policy.md, "Shared region").
//
// Conventions as in epoch_policy_test.cc: samples are 100 bytes, job J's sample
// x is object J*1000 + x, a miss costs 1000 ns, e = 4 - compute/1000 (b = 4,
// W = 1). Objects 500.. are files no job lists (a shell loop, a script).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "epochfs/cache/epoch_policy.h"
#include "policy_harness.h"

namespace epochfs::cache {
// Named, not anonymous: a unity build compiles this file with the others of its binary.
namespace shared_region_test {

using testing::Harness;
using testing::Iota;
using testing::Snap;
using testing::UniformSamples;

constexpr uint64_t kSize = 100;
constexpr uint64_t kLoad = 1000;

std::unique_ptr<Policy> Make(uint64_t budget, bool share_idle = true) {
  EpochPolicyParams p;
  p.budget_bytes = budget;
  p.seed = 7;
  p.share_idle = share_idle;
  return MakeEpochPolicy(p);
}

uint64_t ComputeFor(uint32_t e) { return (4 - e) * kLoad; }
ObjectId Obj(JobId job, uint32_t x) { return job * 1000 + x; }
std::vector<ObjectId> Ids(std::initializer_list<ObjectId> l) { return l; }

struct Shared : ::testing::Test {
  // An unattributed read of object `id` (size `size`).
  static bool Shell(Harness& h, ObjectId id, uint64_t size = kSize, JobId job = kNoJob,
                    uint64_t load = kLoad) {
    h.set_size(id, size);
    return h.Touch(Access{id, size, job, -1, 0}, load);
  }
  static void AddJob(Harness& h, JobId id, uint64_t compute) {
    h.AddJob(JobSpec{id, "job" + std::to_string(id), 4, 5, 1, compute},
             UniformSamples(16, kSize, Obj(id, 0)));
  }
  // Orders 0 and 1 declared (only 0 when !declare_next), epoch 0 read
  // (warm-up), T = 16*step.
  static void WarmUp(Harness& h, JobId id, uint64_t step, bool declare_next = true) {
    ASSERT_TRUE(h.policy().SetOrder(id, 0, Iota(16)).ok());
    if (declare_next) {
      ASSERT_TRUE(h.policy().SetOrder(id, 1, Iota(16)).ok());
    }
    h.BeginEpoch(id, 0, 0);
    for (uint32_t x = 0; x < 16; ++x) h.Read(id, x, (x + 1) * step, kLoad);
  }
  static void ExpectBudget(Policy& p) {
    uint64_t sum = p.pool_bytes() + p.shared_bytes();
    for (const JobSnapshot& s : p.Jobs()) {
      sum += s.cur_bytes + s.next_bytes + s.tail_bytes + s.granted_unused_bytes;
    }
    EXPECT_EQ(sum, p.budget());
  }
};

// (a) No job: unattributed misses are admitted up to the budget, then the least
// recently used shared objects make room; a hit refreshes.
TEST_F(Shared, WithoutJobsUnattributedReadsAreCachedLru) {
  Harness h(Make(1000));
  for (ObjectId id = 500; id < 510; ++id) {
    EXPECT_FALSE(Shell(h, id));
    EXPECT_TRUE(h.last.admit);
    EXPECT_TRUE(h.last.evict.empty());
  }
  EXPECT_EQ(h.policy().shared_bytes(), 1000u);
  EXPECT_EQ(h.policy().pool_bytes(), 0u);
  EXPECT_EQ(h.policy().resident_bytes(), 1000u);
  EXPECT_TRUE(Shell(h, 500));  // hit: 500 becomes the most recently used
  EXPECT_FALSE(h.last.admit);
  EXPECT_TRUE(h.last.evict.empty());
  EXPECT_FALSE(Shell(h, 510));
  EXPECT_TRUE(h.last.admit);
  EXPECT_EQ(h.last.evict, Ids({501}));
  EXPECT_FALSE(Shell(h, 511));
  EXPECT_EQ(h.last.evict, Ids({502}));
  // A larger object evicts as many as it needs, oldest first.
  EXPECT_FALSE(Shell(h, 512, 250));
  EXPECT_EQ(h.last.evict, Ids({503, 504, 505}));
  EXPECT_EQ(h.policy().shared_bytes(), 950u);
  EXPECT_EQ(h.policy().pool_bytes(), 50u);
  EXPECT_TRUE(h.resident(500));
  // Larger than the budget, or empty: not cached.
  EXPECT_FALSE(Shell(h, 513, 1001));
  EXPECT_FALSE(h.last.admit);
  EXPECT_TRUE(h.last.evict.empty());
  EXPECT_FALSE(Shell(h, 514, 0));
  EXPECT_FALSE(h.last.admit);
  // A job the policy does not know is no job.
  EXPECT_FALSE(Shell(h, 515, kSize, /*job=*/42));
  EXPECT_TRUE(h.last.admit);
  EXPECT_EQ(h.last.evict, Ids({506}));
  // The store loses a shared object: its bytes are free again.
  h.Drop(500);
  EXPECT_EQ(h.policy().shared_bytes(), 850u);
  EXPECT_EQ(h.policy().pool_bytes(), 150u);
  // ... or loses one without telling: the miss repairs and re-admits.
  h.ForgetSilently(507);
  EXPECT_FALSE(Shell(h, 507));
  EXPECT_TRUE(h.last.admit);
  EXPECT_EQ(h.policy().shared_bytes(), 850u);
  ExpectBudget(h.policy());
}

// (d) share_idle = false: unattributed reads are never cached (the old policy).
TEST_F(Shared, ShareIdleOffNeverCachesUnattributedReads) {
  Harness h(Make(1000, /*share_idle=*/false));
  for (ObjectId id = 500; id < 510; ++id) {
    EXPECT_FALSE(Shell(h, id));
    EXPECT_FALSE(h.last.admit);
  }
  EXPECT_FALSE(Shell(h, 500, kSize, 42));
  EXPECT_FALSE(h.last.admit);
  EXPECT_EQ(h.policy().shared_bytes(), 0u);
  EXPECT_EQ(h.policy().pool_bytes(), 1000u);
  AddJob(h, 1, ComputeFor(4));
  WarmUp(h, 1, 100);
  EXPECT_EQ(h.admissions, 0u) << "warm-up caches nothing";
}

// (b) A job's grants reclaim shared space, least recently used first, and
// while the shared region holds nothing the job is about to read, the job's
// account is exactly what it is without the shared region. (When it does hold
// such objects the job adopts them, and its regions then legitimately differ
// from share_idle = false: it holds what the other policy must load. Here job
// 1's epoch-1 order is declared only after its warm-up, so nothing is adopted
// then, and by epoch 1 the shell files have displaced its warm-up reads.)
TEST_F(Shared, GrantsReclaimSharedObjectsLeastRecentlyUsedFirst) {
  Harness h(Make(2000));
  Harness ref(Make(2000, /*share_idle=*/false));
  for (Harness* x : {&h, &ref}) {
    AddJob(*x, 1, ComputeFor(4));  // fast, wants 1600, reserves C = 1000
    AddJob(*x, 2, ComputeFor(0));  // slow, wants nothing
    WarmUp(*x, 1, 100, /*declare_next=*/false);
    WarmUp(*x, 2, 200);
  }
  // Warm-up reads went to the shared region; the reservation took its bytes.
  EXPECT_EQ(Snap(h.policy(), 1).reserved_bytes, 1000u);
  EXPECT_EQ(h.policy().pool_bytes() + h.policy().shared_bytes(), 1000u);
  EXPECT_GT(h.policy().shared_bytes(), 0u);
  // A shell loop fills the idle 1000 bytes; 500 is then read again.
  for (ObjectId id = 500; id < 510; ++id) Shell(h, id);
  Shell(h, 500);
  ASSERT_EQ(h.policy().shared_bytes(), 1000u);
  ASSERT_EQ(h.policy().pool_bytes(), 0u);
  for (Harness* x : {&h, &ref}) {
    ASSERT_TRUE(x->policy().SetOrder(1, 1, Iota(16)).ok());
    ASSERT_TRUE(x->policy().SetOrder(1, 2, Iota(16)).ok());
    x->BeginEpoch(1, 1, 5000);
  }
  EXPECT_EQ(h.policy().shared_bytes(), 1000u) << "only shell files: nothing to adopt";
  auto read = [&](uint32_t x) {
    ref.Read(1, x, 5001 + x);
    h.Read(1, x, 5001 + x);
    EXPECT_TRUE(h.last.admit) << "sample " << x;
    EXPECT_EQ(h.policy().epoch_regions()->Where(1, x), Region::kNext);
    const JobSnapshot a = Snap(ref.policy(), 1), b = Snap(h.policy(), 1);
    EXPECT_EQ(a.next_bytes, b.next_bytes);
    EXPECT_EQ(a.granted_unused_bytes, b.granted_unused_bytes);
    EXPECT_EQ(ref.policy().pool_bytes(), h.policy().pool_bytes() + h.policy().shared_bytes());
    ExpectBudget(h.policy());
  };
  for (uint32_t x = 0; x < 10; ++x) {  // from the reservation: nothing reclaimed
    read(x);
    EXPECT_TRUE(h.last.evict.empty());
  }
  read(10);  // asks 100, granted 2*100: two shared objects go, oldest first
  EXPECT_EQ(h.last.evict, Ids({501, 502}));
  EXPECT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 100u);
  read(11);  // the unused 100
  EXPECT_TRUE(h.last.evict.empty());
  read(12);
  EXPECT_EQ(h.last.evict, Ids({503, 504}));
  for (uint32_t x = 13; x < 16; ++x) read(x);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 1600u);
  EXPECT_TRUE(h.resident(500)) << "the most recently used shared object is still there";
  EXPECT_EQ(h.policy().shared_bytes(), 400u);
  // EndJob returns the job's bytes to the truly free pool; the shared region stays.
  h.EndJob(1);
  h.EndJob(2);
  EXPECT_EQ(h.policy().pool_bytes(), 1600u);
  EXPECT_EQ(h.policy().shared_bytes(), 400u);
  EXPECT_EQ(h.policy().resident_bytes(), 400u);
}

// A job's warm-up reads are unclaimed: they enter the shared region. When the
// warm-up ends, those the job reads in its next epoch are adopted into `next`
// within the reservation (so taking the reservation cannot evict them); at the
// start of that epoch they are `cur`, and every read of it hits.
TEST_F(Shared, WarmupReadsAreAdoptedWhenTheWarmupEndsAndHitInTheNextEpoch) {
  Harness h(Make(2000));
  AddJob(h, 1, ComputeFor(4));  // e = b = 4, need 1600, reserves min(C, need) = 1600
  for (ObjectId id = 500; id < 520; ++id) Shell(h, id);  // 2000 bytes of shell files
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(16)).ok());
  ASSERT_TRUE(h.policy().SetOrder(1, 1, Iota(16)).ok());
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 0, 0);
  for (uint32_t x = 0; x < 15; ++x) {
    h.Read(1, x, (x + 1) * 100);
    EXPECT_TRUE(h.last.admit);
    EXPECT_EQ(h.last.evict, Ids({500 + x})) << "LRU: the oldest shell file";
    EXPECT_EQ(h.policy().epoch_regions()->Where(1, x), Region::kNone);
  }
  // The read that ends warm-up: samples 0..14 (1500 bytes, all in epoch 1's
  // order, 4+4+4+3 per batch <= e) are adopted into `next`; the other 100 bytes
  // of the reservation reclaim the oldest shell file, and the read itself
  // enters the shared region (it was unclaimed) evicting the next oldest.
  h.Read(1, 15, 1600);
  ASSERT_EQ(Snap(h.policy(), 1).state, JobState::kCaching);
  EXPECT_EQ(Snap(h.policy(), 1).reserved_bytes, 1600u);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 1500u);
  EXPECT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 100u);
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{4, 4, 4, 3}));
  EXPECT_EQ(h.last.evict, Ids({515, 516}));
  EXPECT_TRUE(h.last.admit);
  for (uint32_t x = 0; x < 15; ++x) {
    EXPECT_EQ(h.policy().epoch_regions()->Where(1, x), Region::kNext) << "sample " << x;
    EXPECT_TRUE(h.resident(Obj(1, x)));
  }
  EXPECT_EQ(h.policy().shared_bytes(), 400u);  // 517, 518, 519 and sample 15
  EXPECT_EQ(h.policy().pool_bytes(), 0u);
  ExpectBudget(h.policy());
  // Epoch 1 begins: `next` becomes `cur`, and sample 15 (shared, read in this
  // epoch) is adopted into `cur` out of the unused 100 bytes of quota.
  h.BeginEpoch(1, 1, 2000);
  EXPECT_TRUE(h.last.evict.empty());
  EXPECT_EQ(Snap(h.policy(), 1).cur_bytes, 1600u);
  EXPECT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 0u);
  EXPECT_EQ(h.policy().epoch_regions()->Where(1, 15), Region::kCur);
  EXPECT_EQ(h.policy().shared_bytes(), 300u);
  EXPECT_EQ(h.policy().pool_bytes(), 100u);
  ExpectBudget(h.policy());
  // Every read of epoch 1 hits (without adoption: 4 of 16); each frees its
  // `cur` bytes and enters `next` for epoch 2 with no reload.
  for (uint32_t x = 0; x < 16; ++x) {
    EXPECT_TRUE(h.Read(1, x, 2001 + x)) << "sample " << x;
    EXPECT_FALSE(h.last.admit);
    EXPECT_TRUE(h.last.evict.empty());
    EXPECT_EQ(h.policy().epoch_regions()->Where(1, x), Region::kNext);
    ExpectBudget(h.policy());
  }
  EXPECT_EQ(Snap(h.policy(), 1).current.hits, 16u);
  EXPECT_EQ(Snap(h.policy(), 1).current.misses, 0u);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 1600u);
  EXPECT_EQ(h.policy().shared_bytes(), 300u);
  EXPECT_EQ(h.policy().pool_bytes(), 100u);
  EXPECT_TRUE(h.policy().CheckInvariants().ok());
}

// Adoption into `next` respects e (S36) and the reservation; what it cannot
// adopt stays shared. At the next epoch's start, shared objects that epoch reads
// are adopted into `cur` only within the job's unused quota.
TEST_F(Shared, AdoptionRespectsTheBatchCountersAndTheReservation) {
  Harness h(Make(100000));
  AddJob(h, 1, ComputeFor(2));  // e = 2: need 2 per batch = 800 bytes
  WarmUp(h, 1, 100);
  ASSERT_EQ(Snap(h.policy(), 1).state, JobState::kCaching);
  EXPECT_EQ(Snap(h.policy(), 1).reserved_bytes, 800u);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 800u);
  EXPECT_EQ(Snap(h.policy(), 1).granted_unused_bytes, 0u);
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{2, 2, 2, 2}));
  for (uint32_t x = 0; x < 16; ++x) {  // the first two of each batch
    EXPECT_EQ(h.policy().epoch_regions()->Where(1, x), x % 4 < 2 && x != 15 ? Region::kNext : Region::kNone)
        << "sample " << x;
    EXPECT_TRUE(h.resident(Obj(1, x)));
  }
  EXPECT_EQ(h.policy().shared_bytes(), 800u);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  EXPECT_EQ(Snap(h.policy(), 1).cur_bytes, 800u) << "no unused quota: nothing more adopted";
  EXPECT_EQ(h.policy().shared_bytes(), 800u);
  for (uint32_t x = 0; x < 16; ++x) {
    EXPECT_TRUE(h.Read(1, x, 5001 + x)) << "sample " << x;
    EXPECT_FALSE(h.last.admit);
    EXPECT_TRUE(h.last.evict.empty());
  }
  EXPECT_EQ(h.policy().epoch_regions()->NextCounters(1), (std::vector<uint32_t>{2, 2, 2, 2}));
  ExpectBudget(h.policy());
  EXPECT_TRUE(h.policy().CheckInvariants().ok());
}

// Warm-up ended by the next epoch's marker (a short epoch 0): the adopted
// objects are `cur` of the epoch that begins.
TEST_F(Shared, WarmupEndedByTheNextEpochAdoptsIntoCur) {
  Harness h(Make(2000));
  AddJob(h, 1, ComputeFor(4));
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(16)).ok());
  ASSERT_TRUE(h.policy().SetOrder(1, 1, Iota(16)).ok());
  h.BeginEpoch(1, 0, 0);
  for (uint32_t x = 0; x < 10; ++x) h.Read(1, x, (x + 1) * 100);
  EXPECT_EQ(h.policy().shared_bytes(), 1000u);
  h.BeginEpoch(1, 1, 1000);
  ASSERT_EQ(Snap(h.policy(), 1).state, JobState::kCaching);
  EXPECT_EQ(Snap(h.policy(), 1).cur_bytes, 1000u);
  EXPECT_EQ(h.policy().shared_bytes(), 0u);
  EXPECT_TRUE(h.last.evict.empty());
  for (uint32_t x = 0; x < 16; ++x) {
    EXPECT_EQ(h.Read(1, x, 1001 + x), x < 10) << "sample " << x;
  }
  ExpectBudget(h.policy());
  EXPECT_TRUE(h.policy().CheckInvariants().ok());
}

// The epoch began without an order (`epoch` written before `order/K`), so `cur`
// adopted every shared sample; then K's order is declared as a subset. What
// `cur` holds outside the order goes back to the shared region, and reads
// outside the order do not count towards the epoch's end.
TEST_F(Shared, AnOrderDeclaredAfterItsEpochBeganNarrowsCur) {
  Harness h(Make(2000));
  AddJob(h, 1, ComputeFor(4));
  ASSERT_TRUE(h.policy().SetOrder(1, 0, Iota(16)).ok());
  h.BeginEpoch(1, 0, 0);
  for (uint32_t x = 0; x < 10; ++x) h.Read(1, x, (x + 1) * 100);
  h.BeginEpoch(1, 1, 1000);  // no order for epoch 1 yet: implicit
  ASSERT_EQ(Snap(h.policy(), 1).state, JobState::kCaching);
  // The reservation reclaimed the two oldest shared objects (samples 0, 1);
  // the unused quota adopts samples 2..9 into `cur`.
  ASSERT_EQ(Snap(h.policy(), 1).cur_bytes, 800u);
  for (uint32_t x = 2; x < 10; ++x) ASSERT_EQ(h.policy().epoch_regions()->Where(1, x), Region::kCur);
  for (uint32_t x = 12; x < 16; ++x) EXPECT_FALSE(h.Read(1, x, 1000 + x));
  EXPECT_EQ(Snap(h.policy(), 1).batch, 1u) << "4 of 16 implicit samples read";
  const std::vector<uint32_t> order = {0, 1, 2, 3, 4, 5, 10, 11};
  ASSERT_TRUE(h.policy().SetOrder(1, 1, order).ok());
  ASSERT_TRUE(h.policy().CheckInvariants().ok()) << h.policy().CheckInvariants().ToString();
  EXPECT_EQ(Snap(h.policy(), 1).cur_bytes, 400u);
  EXPECT_EQ(Snap(h.policy(), 1).batch, 0u) << "reads outside the order are not progress";
  EXPECT_EQ(Snap(h.policy(), 1).epoch_samples, 8u);
  for (uint32_t x = 6; x < 10; ++x) {
    EXPECT_EQ(h.policy().epoch_regions()->Where(1, x), Region::kNone);
    EXPECT_TRUE(h.resident(Obj(1, x))) << "back in the shared region, not evicted";
  }
  ExpectBudget(h.policy());
  for (uint32_t x : order) {
    EXPECT_EQ(h.Read(1, x, 1100 + x), x >= 2 && x <= 5) << "sample " << x;
    EXPECT_EQ(Snap(h.policy(), 1).epoch, 1u);
  }
  EXPECT_EQ(Snap(h.policy(), 1).cur_bytes, 0u);
  EXPECT_TRUE(h.policy().CheckInvariants().ok());
}

// t_s is a load time: a warm-up read served from the shared region counts the
// load time recorded when the object was loaded.
TEST_F(Shared, WarmupHitsOnSharedObjectsMeasureTheirRecordedLoadTime) {
  Harness h(Make(100000));
  AddJob(h, 1, /*compute=*/0);
  for (uint32_t x = 0; x < 16; ++x) Shell(h, Obj(1, x), kSize, kNoJob, /*load=*/3000);
  WarmUp(h, 1, 100);  // every read a hit
  const JobSnapshot s = Snap(h.policy(), 1);
  EXPECT_EQ(s.current.hits, 16u);
  EXPECT_EQ(s.load_ns_per_sample, 3000u);
}

// Which reads are unclaimed: a file outside a caching job's sample list and a
// done job's reads are; a caching job's reads of its samples are not, even
// when it does not admit them.
TEST_F(Shared, OnlyUnclaimedReadsEnterTheSharedRegion) {
  Harness h(Make(100000));
  AddJob(h, 1, ComputeFor(2));  // e = 2: admits 2 samples per batch
  WarmUp(h, 1, 100);
  // The warm-up epoch: half of it adopted into next (2 per batch), the rest shared.
  EXPECT_EQ(h.policy().shared_bytes(), 800u);
  EXPECT_EQ(Snap(h.policy(), 1).next_bytes, 800u);
  // Evict them through drops to start clean.
  for (uint32_t x = 0; x < 16; ++x) h.Drop(Obj(1, x));
  ASSERT_EQ(h.policy().shared_bytes(), 0u);
  ASSERT_EQ(Snap(h.policy(), 1).next_bytes, 0u);
  ASSERT_TRUE(h.policy().SetOrder(1, 2, Iota(16)).ok());
  h.BeginEpoch(1, 1, 5000);
  for (uint32_t x = 0; x < 4; ++x) {
    h.Read(1, x, 5001 + x);
    EXPECT_EQ(h.last.admit, x < 2);
    EXPECT_EQ(h.policy().epoch_regions()->Where(1, x), x < 2 ? Region::kNext : Region::kNone);
  }
  EXPECT_EQ(h.policy().shared_bytes(), 0u) << "claimed reads stay out of the shared region";
  // A file outside the sample list (a validation file) read by the job.
  EXPECT_FALSE(Shell(h, 500, kSize, /*job=*/1));
  EXPECT_TRUE(h.last.admit);
  EXPECT_EQ(h.policy().shared_bytes(), 100u);
  // A hit on a shared object the job claims but does not admit refreshes it.
  Shell(h, 501);
  Shell(h, Obj(1, 2));  // unattributed: shared, most recent
  EXPECT_TRUE(h.Read(1, 2, 5100));  // a re-read: counter full, not adopted
  EXPECT_EQ(h.policy().epoch_regions()->Where(1, 2), Region::kNone);
  EXPECT_EQ(h.policy().shared_bytes(), 300u);
  ExpectBudget(h.policy());
}

}  // namespace shared_region_test
}  // namespace epochfs::cache
