// SlotIndex against std::unordered_map, over random, sequential and
// high-bits-only object ids, through growth and Reserve.
#include "epochfs/cache/slot_index.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

namespace epochfs::cache {
namespace {

void CheckAgainstMap(const std::vector<ObjectId>& ids, bool reserve) {
  SlotIndex index;
  if (reserve) index.Reserve(ids.size());
  std::unordered_map<ObjectId, uint32_t> want;
  for (ObjectId id : ids) {
    const uint32_t next = static_cast<uint32_t>(want.size());
    const auto [slot, fresh] = index.Insert(id, next);
    auto [it, wfresh] = want.try_emplace(id, next);
    ASSERT_EQ(fresh, wfresh) << id;
    ASSERT_EQ(slot, it->second) << id;
  }
  EXPECT_EQ(index.size(), want.size());
  for (const auto& [id, slot] : want) ASSERT_EQ(index.Find(id), slot) << id;
  // Absent ids: none of them found.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const ObjectId id = rng();
    if (want.count(id) == 0) {
      ASSERT_EQ(index.Find(id), SlotIndex::kNone) << id;
    }
  }
}

TEST(SlotIndex, EmptyFindsNothing) {
  SlotIndex index;
  EXPECT_EQ(index.Find(0), SlotIndex::kNone);
  EXPECT_EQ(index.Find(42), SlotIndex::kNone);
  EXPECT_EQ(index.size(), 0u);
}

TEST(SlotIndex, ZeroIsAnOrdinaryId) {
  SlotIndex index;
  EXPECT_EQ(index.Insert(0, 5), std::make_pair(5u, true));
  EXPECT_EQ(index.Insert(0, 6), std::make_pair(5u, false));
  EXPECT_EQ(index.Find(0), 5u);
  EXPECT_EQ(index.Find(1), SlotIndex::kNone);
}

TEST(SlotIndex, RandomIdsWithRepeats) {
  std::mt19937_64 rng(1);
  std::vector<ObjectId> ids;
  for (int i = 0; i < 200000; ++i) ids.push_back(rng() % 150000);  // many repeats
  CheckAgainstMap(ids, false);
  CheckAgainstMap(ids, true);
}

TEST(SlotIndex, SequentialAndHighBitIds) {
  std::vector<ObjectId> ids;
  for (ObjectId i = 0; i < 100000; ++i) ids.push_back(i);
  for (ObjectId i = 1; i < 100000; ++i) ids.push_back(i << 40);
  for (ObjectId i = 0; i < 100000; ++i) ids.push_back(i);  // again: all known
  CheckAgainstMap(ids, false);
}

TEST(SlotIndex, ReserveKeepsEverything) {
  SlotIndex index;
  for (uint32_t i = 0; i < 1000; ++i) index.Insert(i * 7919ull, i);
  index.Reserve(100000);
  for (uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(index.Find(i * 7919ull), i);
  index.Reserve(10);  // never shrinks
  for (uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(index.Find(i * 7919ull), i);
}

}  // namespace
}  // namespace epochfs::cache
