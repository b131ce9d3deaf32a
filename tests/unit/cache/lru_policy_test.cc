// LRU: the job-blind baseline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "epochfs/cache/policy.h"
#include "policy_harness.h"

namespace epochfs::cache {
namespace {

using testing::Harness;

Access A(ObjectId id, uint64_t size) { return Access{id, size, kNoJob, -1, 0}; }

TEST(LruPolicy, AdmitsUntilBudgetThenEvictsLeastRecent) {
  Harness h(MakeLruPolicy(300));
  for (ObjectId id = 1; id <= 3; ++id) {
    h.set_size(id, 100);
    EXPECT_FALSE(h.Touch(A(id, 100)));
    EXPECT_TRUE(h.last.admit);
    EXPECT_TRUE(h.last.evict.empty());
  }
  EXPECT_EQ(h.policy().resident_bytes(), 300u);
  EXPECT_EQ(h.policy().pool_bytes(), 0u);
  // Touch 1 so that 2 becomes the least recently used.
  EXPECT_TRUE(h.Touch(A(1, 100)));
  h.set_size(4, 100);
  EXPECT_FALSE(h.Touch(A(4, 100)));
  EXPECT_TRUE(h.last.admit);
  EXPECT_EQ(h.last.evict, std::vector<ObjectId>{2});
  h.set_size(5, 100);
  EXPECT_FALSE(h.Touch(A(5, 100)));
  EXPECT_EQ(h.last.evict, std::vector<ObjectId>{3});
}

TEST(LruPolicy, SetBudgetEvictsLeastRecentUntilTheRestFits) {
  Harness h(MakeLruPolicy(300));
  for (ObjectId id = 1; id <= 3; ++id) {
    h.set_size(id, 100);
    h.Touch(A(id, 100));
  }
  EXPECT_TRUE(h.Touch(A(1, 100)));  // order, most recent first: 1 3 2
  Result<Decision> r = h.policy().SetBudget(150);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().evict, (std::vector<ObjectId>{2, 3}));
  h.Apply(r.value(), 0);
  EXPECT_EQ(h.policy().budget(), 150u);
  EXPECT_EQ(h.policy().resident_bytes(), 100u);
  r = h.policy().SetBudget(400);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().evict.empty());
  for (ObjectId id = 4; id <= 6; ++id) {
    h.set_size(id, 100);
    h.Touch(A(id, 100));
    EXPECT_TRUE(h.last.evict.empty());
  }
  EXPECT_EQ(h.policy().resident_bytes(), 400u);
}

TEST(LruPolicy, EvictsAsManyAsNeededForALargeObject) {
  Harness h(MakeLruPolicy(300));
  for (ObjectId id = 1; id <= 3; ++id) {
    h.set_size(id, 100);
    h.Touch(A(id, 100));
  }
  h.set_size(9, 250);
  EXPECT_FALSE(h.Touch(A(9, 250)));
  EXPECT_TRUE(h.last.admit);
  EXPECT_EQ(h.last.evict, (std::vector<ObjectId>{1, 2, 3}));
  EXPECT_EQ(h.policy().resident_bytes(), 250u);
}

TEST(LruPolicy, NeverAdmitsAnObjectLargerThanTheBudget) {
  Harness h(MakeLruPolicy(300));
  h.set_size(1, 100);
  h.Touch(A(1, 100));
  h.set_size(2, 301);
  EXPECT_FALSE(h.Touch(A(2, 301)));
  EXPECT_FALSE(h.last.admit);
  EXPECT_TRUE(h.last.evict.empty());
  EXPECT_TRUE(h.resident(1));
}

TEST(LruPolicy, DroppedObjectIsForgotten) {
  Harness h(MakeLruPolicy(300));
  h.set_size(1, 100);
  h.Touch(A(1, 100));
  h.Drop(1);
  EXPECT_EQ(h.policy().resident_bytes(), 0u);
  EXPECT_FALSE(h.Touch(A(1, 100)));
  EXPECT_TRUE(h.last.admit);
}

TEST(LruPolicy, RandomAccessesRespectBudget) {
  Harness h(MakeLruPolicy(5000));
  uint64_t x = 12345;
  for (int i = 0; i < 5000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const ObjectId id = 1 + (x >> 33) % 200;
    const uint64_t size = 1 + id * 37 % 900;
    h.set_size(id, size);
    h.Touch(A(id, size));
  }
  EXPECT_GT(h.evictions, 0u);
  EXPECT_LE(h.policy().resident_bytes(), 5000u);
}

TEST(LruPolicy, JobCallsAreAcceptedAndIgnored) {
  auto p = MakeLruPolicy(100);
  EXPECT_TRUE(p->AddJob(JobSpec{1, "a", 4, 2, 1, 0}).ok());
  EXPECT_TRUE(p->SetOrder(1, 0, {0, 1}).ok());
  EXPECT_TRUE(p->BeginEpoch(1, 0, 0).ok());
  EXPECT_TRUE(p->EndJob(1).ok());
  EXPECT_TRUE(p->Jobs().empty());
  EXPECT_EQ(p->pool_bytes(), 100u);
}

}  // namespace
}  // namespace epochfs::cache
