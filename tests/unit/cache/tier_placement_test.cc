// The disk tier's placement (tier_placement.h): under the future policy, an
// object whose next declared read comes within what the tier holds is
// written, one beyond it is not; eviction by the farthest next read;
// undeclared objects after every declared one, least recently read first.
// The LRU placement of the other policies.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "epochfs/cache/future_policy.h"
#include "epochfs/cache/tier_placement.h"

namespace epochfs::cache {
// Named, not anonymous: a unity build compiles this file with the others of its binary.
namespace tier_placement_test {

constexpr uint64_t kSize = 100;
constexpr uint64_t kMs = 1'000'000;

ObjectId Obj(uint32_t k) { return 1000 + k; }

std::vector<uint32_t> Iota(uint32_t n) {
  std::vector<uint32_t> v(n);
  std::iota(v.begin(), v.end(), 0u);
  return v;
}

// One job of `n` samples of kSize bytes, 3 epochs, epoch 0 in order, epoch 1
// reading `next` (a subset: the others are next read in epoch 2, later than
// any of epoch 1; within an epoch the policy spreads places, so the tests
// tell sooner from later by epochs); RAM for one object, the tier for
// `tier_objects`.
struct World {
  World(uint32_t n, uint32_t tier_objects, std::vector<uint32_t> next) {
    FuturePolicyParams p;
    p.budget_bytes = kSize;
    policy = MakeFuturePolicy(p);
    tier = policy->tier_placement();
    EXPECT_NE(tier, nullptr);
    EXPECT_TRUE(tier->SetBudget(tier_objects * kSize, 0).evict.empty());
    JobSpec s;
    s.id = 1;
    s.name = "j";
    s.batch_size = 1;
    s.epochs = 3;
    EXPECT_TRUE(policy->AddJob(s).ok());
    std::vector<SampleRef> samples;
    for (uint32_t k = 0; k < n; ++k) samples.push_back({Obj(k), kSize});
    EXPECT_TRUE(policy->SetSamples(1, samples).ok());
    EXPECT_TRUE(policy->SetOrder(1, 0, Iota(n)).ok());
    EXPECT_TRUE(policy->SetOrder(1, 1, std::move(next)).ok());
    EXPECT_TRUE(policy->BeginEpoch(1, 0, 1).ok());
  }
  // Sample k loaded from LOWER by the job at time t (ms): what the tier does.
  TierDecision Load(uint32_t k, uint64_t t, JobId job = 1) {
    Access a{Obj(k), kSize, job, job == kNoJob ? -1 : int64_t{k}, t * kMs};
    policy->OnMiss(a, kMs);
    TierDecision d = tier->OnLoaded(a);
    for (ObjectId v : d.evict) held.erase(std::remove(held.begin(), held.end(), v), held.end());
    if (d.write) {
      ++writes;
      held.push_back(a.object);
    }
    return d;
  }
  std::vector<ObjectId> Held() const {
    std::vector<ObjectId> h = held;
    std::sort(h.begin(), h.end());
    return h;
  }
  std::unique_ptr<Policy> policy;
  TierPlacement* tier = nullptr;
  std::vector<ObjectId> held;
  uint64_t writes = 0;
};

TEST(FutureTier, BeyondTheHorizonIsNotWritten) {
  // Epoch 1 reads samples 0..2 again; 3..9 come back only in epoch 2. The
  // tier holds 3: 0..2 are written, 3..9 would be read later than all of
  // them and are never written.
  World w(10, 3, {2, 0, 1});
  for (uint32_t k = 0; k < 10; ++k) {
    const TierDecision d = w.Load(k, 1 + k);
    EXPECT_EQ(d.write, k < 3) << k;
    EXPECT_TRUE(d.evict.empty()) << k;
  }
  EXPECT_EQ(w.writes, 3u);
  EXPECT_EQ(w.Held(), (std::vector<ObjectId>{Obj(0), Obj(1), Obj(2)}));
  EXPECT_EQ(w.tier->used(), 3 * kSize);
  for (uint32_t k = 0; k < 10; ++k) EXPECT_EQ(w.tier->Holds(Obj(k)), k < 3) << k;
}

TEST(FutureTier, EvictsTheFarthestNextRead) {
  // Epoch 1 reads 7..9 only. 0..2 fill the tier (next read in epoch 2);
  // 3..6 are no sooner and are not written; each of 7..9 is read sooner
  // than what is held and takes the place of one of 0..2.
  World w(10, 3, {9, 7, 8});
  for (uint32_t k = 0; k < 3; ++k) EXPECT_TRUE(w.Load(k, 1 + k).write);
  for (uint32_t k = 3; k < 7; ++k) {
    const TierDecision d = w.Load(k, 1 + k);
    EXPECT_FALSE(d.write) << k;
    EXPECT_TRUE(d.evict.empty()) << k;
  }
  for (uint32_t k = 7; k < 10; ++k) {
    const TierDecision d = w.Load(k, 1 + k);
    EXPECT_TRUE(d.write) << k;
    ASSERT_EQ(d.evict.size(), 1u) << k;
    EXPECT_LT(d.evict[0], Obj(3)) << k;
  }
  EXPECT_EQ(w.writes, 6u);
  EXPECT_EQ(w.Held(), (std::vector<ObjectId>{Obj(7), Obj(8), Obj(9)}));
  EXPECT_LE(w.tier->used(), w.tier->budget());
}

TEST(FutureTier, UndeclaredReadsUseTheIdleSpaceLeastRecentlyReadFirst) {
  World w(4, 4, Iota(4));
  // Objects 20, 21, 22 nobody declared: written while there is room.
  EXPECT_TRUE(w.Load(20, 1, kNoJob).write);
  EXPECT_TRUE(w.Load(21, 2, kNoJob).write);
  EXPECT_TRUE(w.Load(22, 3, kNoJob).write);
  // 20 read again (from the tier): now 21 is the least recently read.
  Access again{Obj(20), kSize, kNoJob, -1, 4 * kMs};
  w.policy->OnHit(again);
  EXPECT_TRUE(w.tier->OnRead(again).evict.empty());
  // Declared samples take their place, the undeclared least recent first.
  EXPECT_TRUE(w.Load(0, 5).write);
  const TierDecision d1 = w.Load(1, 6);
  EXPECT_TRUE(d1.write);
  EXPECT_EQ(d1.evict, std::vector<ObjectId>{Obj(21)});
  const TierDecision d2 = w.Load(2, 7);
  EXPECT_EQ(d2.evict, std::vector<ObjectId>{Obj(22)});
  const TierDecision d3 = w.Load(3, 8);
  EXPECT_EQ(d3.evict, std::vector<ObjectId>{Obj(20)});
  EXPECT_EQ(w.Held(), (std::vector<ObjectId>{Obj(0), Obj(1), Obj(2), Obj(3)}));
  // A new undeclared object is read later than every declared one: bypassed.
  EXPECT_FALSE(w.Load(23, 9, kNoJob).write);
}

TEST(FutureTier, DroppedAndShrunk) {
  World w(6, 6, {0, 1, 2});
  for (uint32_t k = 0; k < 6; ++k) EXPECT_TRUE(w.Load(k, 1 + k).write);
  w.tier->OnDropped(Obj(0));  // a checksum error: forgotten
  EXPECT_FALSE(w.tier->Holds(Obj(0)));
  EXPECT_EQ(w.tier->used(), 5 * kSize);
  // A full disk: the budget shrinks to two objects; the farthest (read in
  // epoch 2) go.
  const TierDecision d = w.tier->SetBudget(2 * kSize, 10 * kMs);
  std::vector<ObjectId> gone = d.evict;
  std::sort(gone.begin(), gone.end());
  EXPECT_EQ(gone, (std::vector<ObjectId>{Obj(3), Obj(4), Obj(5)}));
  EXPECT_EQ(w.tier->used(), 2 * kSize);
}

TEST(LruTier, WritesEveryLoadAndEvictsTheLeastRecentlyRead) {
  std::unique_ptr<TierPlacement> t = MakeLruTier(3 * kSize);
  auto load = [&](uint32_t k, uint64_t size = kSize) {
    return t->OnLoaded(Access{Obj(k), size, kNoJob, -1, k * kMs});
  };
  for (uint32_t k = 0; k < 3; ++k) {
    const TierDecision d = load(k);
    EXPECT_TRUE(d.write);
    EXPECT_TRUE(d.evict.empty());
  }
  t->OnRead(Access{Obj(0), kSize, kNoJob, -1, 5 * kMs});  // 1 is now the least recent
  TierDecision d = load(3);
  EXPECT_TRUE(d.write);
  EXPECT_EQ(d.evict, std::vector<ObjectId>{Obj(1)});
  EXPECT_FALSE(load(4, 4 * kSize).write) << "larger than the tier";
  d = t->SetBudget(kSize, 0);
  EXPECT_EQ(d.evict, (std::vector<ObjectId>{Obj(2), Obj(0)}));
  EXPECT_TRUE(t->Holds(Obj(3)));
  EXPECT_EQ(t->used(), kSize);
  t->OnDropped(Obj(3));
  EXPECT_EQ(t->used(), 0u);
}

}  // namespace tier_placement_test
}  // namespace epochfs::cache
