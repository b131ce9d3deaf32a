// InFlightTarget: on a store where loads side by side take as long as one
// alone (a latency store) the target climbs to the bound; on one where each
// load more lengthens all of them (a queue) it goes back and holds, probing
// again only after the hold; a level reached on loads that were cheap then is
// left once its loads cost more than the level below's; after a step down the
// level below is measured afresh (not compared with a slow start); loads
// begun under another target are ignored. A target that begins above its
// floor climbs from there on a latency store and still comes down to the
// floor on a queue.
#include "epochfs/cache/inflight_target.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>

namespace epochfs::cache {
namespace inflight_target_test {

constexpr uint64_t kMs = 1'000'000;

// Runs `rounds` rounds: each starts `target()` loads at once, all under the
// current generation, that take duration(in_flight) and end together.
// Returns the largest target seen; *now advances.
uint32_t Rounds(InFlightTarget* t, int rounds, const std::function<uint64_t(uint32_t)>& duration,
                uint64_t* now) {
  uint32_t most = t->target();
  for (int r = 0; r < rounds; ++r) {
    const uint32_t n = t->target();
    const uint64_t g = t->generation();
    const uint64_t d = duration(n);
    *now += d;
    for (uint32_t i = 0; i < n; ++i) t->OnLoad(g, d, *now);
    most = std::max(most, t->target());
  }
  return most;
}

TEST(InFlightTarget, ClimbsToTheBoundOnALatencyStore) {
  InFlightTarget t(128, 4);
  uint64_t now = 0;
  Rounds(&t, 40, [](uint32_t) { return 35 * kMs; }, &now);
  EXPECT_EQ(t.target(), 128u);
  // And stays there.
  Rounds(&t, 400, [](uint32_t) { return 35 * kMs; }, &now);
  EXPECT_EQ(t.target(), 128u);
}

TEST(InFlightTarget, StopsAtANotPowerOfTwoBound) {
  InFlightTarget t(100, 4);
  uint64_t now = 0;
  Rounds(&t, 40, [](uint32_t) { return 5 * kMs; }, &now);
  EXPECT_EQ(t.target(), 100u);
}

TEST(InFlightTarget, GoesBackAndHoldsOnAQueue) {
  InFlightTarget t(128, 4);
  uint64_t now = 0;
  auto queue = [](uint32_t n) { return n * 2 * kMs; };  // each load in flight adds 2 ms
  // The first window at 4 has nothing to compare with: it tries 8, which
  // doubles each load's time, and goes back to 4.
  EXPECT_EQ(Rounds(&t, 2, queue, &now), 8u);
  ASSERT_EQ(t.target(), 8u);
  Rounds(&t, 1, queue, &now);
  ASSERT_EQ(t.target(), 4u);
  // Held: no probe before kHoldNs have passed.
  const uint64_t held_at = now;
  while (now - held_at < InFlightTarget::kHoldNs - 100 * kMs) {
    Rounds(&t, 1, queue, &now);
    ASSERT_EQ(t.target(), 4u) << (now - held_at) / kMs << " ms into the hold";
  }
  // After it, one probe (8), and back again.
  EXPECT_EQ(Rounds(&t, 200, queue, &now), 8u);
  EXPECT_EQ(t.target(), 4u);
}

TEST(InFlightTarget, LeavesALevelReachedOnCheapLoads) {
  // A run's first loads are cheap whatever the number in flight (served
  // before the store's queue sets in): the target climbs on them. Then the
  // store is a queue (each load in flight adds 2 ms): the target must come
  // back to where it started, within the hold, not stop one level above.
  InFlightTarget t(128, 4);
  uint64_t now = 0;
  Rounds(&t, 4, [](uint32_t) { return kMs / 2; }, &now);
  ASSERT_GE(t.target(), 16u);
  auto queue = [](uint32_t n) { return n * 2 * kMs; };
  const uint64_t queued_at = now;
  Rounds(&t, 20, queue, &now);
  ASSERT_LT(now - queued_at, InFlightTarget::kHoldNs);
  EXPECT_EQ(t.target(), 4u);
  // And it holds there until the probe.
  Rounds(&t, 20, queue, &now);
  EXPECT_EQ(t.target(), 4u);
}

TEST(InFlightTarget, MeasuresTheLevelBelowAgainAfterASlowStart) {
  // The run's first loads are the slowest of it (a cold store: metadata read
  // first, a throttle's first slice): 400 ms each at 4. Then the store is a
  // queue (each load in flight adds 2 ms). 8 looks cheap against that first
  // window, 16 does not: the target comes down to 8, and must not stop there
  // (comparing 8 with the slow start forever), but measure 4 again and go
  // back to it, within the hold.
  InFlightTarget t(128, 4);
  uint64_t now = 0;
  Rounds(&t, 2, [](uint32_t) { return 400 * kMs; }, &now);
  ASSERT_EQ(t.target(), 8u);
  auto queue = [](uint32_t n) { return n * 2 * kMs; };
  const uint64_t queued_at = now;
  EXPECT_EQ(Rounds(&t, 20, queue, &now), 16u);
  ASSERT_LT(now - queued_at, InFlightTarget::kHoldNs);
  EXPECT_EQ(t.target(), 4u);
  // And it holds there until the probe.
  Rounds(&t, 20, queue, &now);
  EXPECT_EQ(t.target(), 4u);
}

TEST(InFlightTarget, GoesBackUpWhenTheLevelBelowCostsAsMuch) {
  // Came down from 16 to 8 on a window that was slow for other reasons (a
  // burst of the readers' own loads): 8 measured afresh costs as much as 16
  // did, so 16 paid after all; the target returns to it and holds.
  InFlightTarget t(128, 4);
  uint64_t now = 0;
  Rounds(&t, 3, [](uint32_t) { return 10 * kMs; }, &now);  // 4 (two rounds), 8, then 16
  ASSERT_EQ(t.target(), 16u);
  Rounds(&t, 1, [](uint32_t) { return 100 * kMs; }, &now);  // 16 looks slow
  ASSERT_EQ(t.target(), 8u);
  Rounds(&t, 1, [](uint32_t) { return 80 * kMs; }, &now);   // 8 is as slow
  EXPECT_EQ(t.target(), 16u);
  Rounds(&t, 20, [](uint32_t) { return 80 * kMs; }, &now);
  EXPECT_EQ(t.target(), 16u);
}

TEST(InFlightTarget, ClimbsWhereTheStoreStillHasRoom) {
  // A store of 16 servers: up to 16 loads take 10 ms, more queue.
  InFlightTarget t(256, 4);
  uint64_t now = 0;
  auto servers = [](uint32_t n) { return (n <= 16 ? 10 : 10 * n / 16) * kMs; };
  Rounds(&t, 200, servers, &now);
  // 32 costs each load 2x: the target settles at 16, or probes to 32 and back.
  EXPECT_EQ(t.target(), 16u);
}

TEST(InFlightTarget, IgnoresLoadsBegunUnderAnotherTarget) {
  InFlightTarget t(64, 4);
  const uint64_t g0 = t.generation();
  for (int i = 0; i < 8; ++i) t.OnLoad(g0, 10 * kMs, 100 * kMs);
  ASSERT_EQ(t.target(), 8u);
  // Slow loads that began at 4 do not count against 8.
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(t.OnLoad(g0, 1000 * kMs, 200 * kMs));
  EXPECT_EQ(t.target(), 8u);
  const uint64_t g1 = t.generation();
  EXPECT_NE(g1, g0);
  for (int i = 0; i < 8; ++i) t.OnLoad(g1, 10 * kMs, 300 * kMs);
  EXPECT_EQ(t.target(), 16u);
}

TEST(InFlightTarget, BoundsOfOneAndAStartAboveTheBound) {
  InFlightTarget one(1, 4);
  EXPECT_EQ(one.target(), 1u);
  uint64_t now = 0;
  Rounds(&one, 100, [](uint32_t) { return kMs; }, &now);
  EXPECT_EQ(one.target(), 1u);
  InFlightTarget two(2, 4);
  EXPECT_EQ(two.target(), 2u);
}

TEST(InFlightTarget, BeginsAtTheLevelAskedAndClimbsFromIt) {
  InFlightTarget t(128, 4, 16);
  EXPECT_EQ(t.target(), 16u);
  uint64_t now = 0;
  // One window at each of 16, 32 and 64: 128 after three rounds (from 4:
  // two rounds at 4, then 8, 16, 32 and 64, six).
  Rounds(&t, 3, [](uint32_t) { return 15 * kMs; }, &now);
  EXPECT_EQ(t.target(), 128u);
  Rounds(&t, 100, [](uint32_t) { return 15 * kMs; }, &now);
  EXPECT_EQ(t.target(), 128u);
  // Not a level: rounded down to one (4 doubled); below the floor: the floor;
  // above the bound: the bound.
  EXPECT_EQ(InFlightTarget(128, 4, 20).target(), 16u);
  EXPECT_EQ(InFlightTarget(128, 4, 2).target(), 4u);
  EXPECT_EQ(InFlightTarget(8, 4, 16).target(), 8u);
  EXPECT_EQ(InFlightTarget(100, 4, 1000).target(), 100u);
}

TEST(InFlightTarget, ComesDownToTheFloorOnAQueueWhenBegunAboveIt) {
  // Each load in flight adds 2 ms (a disk): begun at 16, the target tries 32,
  // then measures 16, 8 and 4 afresh and holds at 4, within the hold.
  InFlightTarget t(128, 4, 16);
  uint64_t now = 0;
  auto queue = [](uint32_t n) { return n * 2 * kMs; };
  EXPECT_EQ(Rounds(&t, 1, queue, &now), 32u);
  Rounds(&t, 20, queue, &now);
  ASSERT_LT(now, InFlightTarget::kHoldNs);
  EXPECT_EQ(t.target(), 4u);
  Rounds(&t, 20, queue, &now);
  EXPECT_EQ(t.target(), 4u);
}

TEST(InFlightTarget, SettlesAtTheStoresServersWhenBegunAboveThem) {
  // A store of 8 servers: up to 8 loads take 10 ms, more queue. Begun at 16,
  // the target ends at 8 (or probes 16 and comes back), never at 16 or more.
  InFlightTarget t(128, 4, 16);
  uint64_t now = 0;
  auto servers = [](uint32_t n) { return (n <= 8 ? 10 : 10 * n / 8) * kMs; };
  Rounds(&t, 200, servers, &now);
  EXPECT_EQ(t.target(), 8u);
}

}  // namespace inflight_target_test
}  // namespace epochfs::cache
