#include "epochfs/control/epoch_tracker.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "test_util.h"

namespace epochfs::control {
namespace {

std::vector<uint32_t> Iota(uint32_t n) {
  std::vector<uint32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

EpochTrackerOptions Opts(uint32_t batch, uint32_t loaders, uint32_t prefetch) {
  EpochTrackerOptions o;
  o.batch_size = batch;
  o.loaders = loaders;
  o.prefetch_factor = prefetch;
  return o;
}

TEST(EpochTracker, InOrderEpochsWithBatchPositions) {
  EpochTracker t(8, Opts(2, 1, 1));
  std::vector<uint32_t> o0 = {7, 6, 5, 4, 3, 2, 1, 0};
  std::vector<uint32_t> o1 = {0, 2, 4, 6, 1, 3, 5, 7};
  ASSERT_TRUE(t.SetOrder(0, o0).ok());
  ASSERT_TRUE(t.SetOrder(1, o1).ok());
  for (size_t i = 0; i < o0.size(); ++i) {
    TrackedAccess a = t.OnAccess(o0[i]);
    EXPECT_EQ(a.epoch, 0u);
    EXPECT_EQ(a.position, static_cast<int64_t>(i));
    EXPECT_EQ(a.batch, static_cast<int64_t>(i / 2));
    EXPECT_EQ(a.began.has_value(), i == 0);
    EXPECT_EQ(a.completed.has_value(), i == o0.size() - 1);
    EXPECT_FALSE(a.repeat);
  }
  EXPECT_EQ(t.consumed_in_current(), 8u);
  for (size_t i = 0; i < o1.size(); ++i) {
    TrackedAccess a = t.OnAccess(o1[i]);
    EXPECT_EQ(a.epoch, 1u) << i;
    EXPECT_EQ(a.batch, static_cast<int64_t>(i / 2));
    EXPECT_EQ(a.began == std::optional<uint32_t>(1), i == 0);
  }
  EXPECT_EQ(t.current_epoch(), std::optional<uint32_t>(1));
  // Epoch 0's order was dropped when epoch 1 began (0 was complete).
  EXPECT_EQ(t.declared_epochs(), std::vector<uint32_t>{1});
}

// A restarted job (re-attach) reads its current epoch again from the start:
// the re-reads count for that epoch, also near its end where a re-read would
// otherwise begin the next one.
TEST(EpochTracker, RestartEpochCountsReReadsForTheSameEpoch) {
  EpochTracker t(8, Opts(2, 1, 1));  // window: 2 samples
  ASSERT_TRUE(t.SetOrder(0, Iota(8)).ok());
  ASSERT_TRUE(t.SetOrder(1, Iota(8)).ok());
  for (uint32_t s = 0; s < 7; ++s) t.OnAccess(s);  // crashed just before the end of epoch 0
  t.RestartEpoch();
  EXPECT_EQ(t.current_epoch(), std::optional<uint32_t>(0));
  EXPECT_EQ(t.consumed_in_current(), 0u);
  for (uint32_t s = 0; s < 8; ++s) {
    TrackedAccess a = t.OnAccess(s);
    EXPECT_EQ(a.epoch, 0u) << s;
    EXPECT_FALSE(a.repeat) << s;
    EXPECT_FALSE(a.began.has_value()) << s;
    EXPECT_EQ(a.completed.has_value(), s == 7) << s;
  }
  TrackedAccess next = t.OnAccess(0);
  EXPECT_EQ(next.began, std::optional<uint32_t>(1));
  EXPECT_EQ(t.declared_epochs(), std::vector<uint32_t>{1});

  // Without the restart, the same re-read near the end begins epoch 2 early.
  for (uint32_t s = 1; s < 7; ++s) t.OnAccess(s);
  EXPECT_EQ(t.OnAccess(0).began, std::optional<uint32_t>(2));

  EpochTracker fresh(4, Opts(1, 1, 1));
  fresh.RestartEpoch();  // nothing begun: no-op
  EXPECT_FALSE(fresh.current_epoch().has_value());
}

TEST(EpochTracker, NoOrdersUsesTheBasicRule) {
  EpochTracker t(4, Opts(1, 1, 1));
  for (uint32_t s : {2u, 0u, 3u, 1u}) {
    TrackedAccess a = t.OnAccess(s);
    EXPECT_EQ(a.epoch, 0u);
    EXPECT_EQ(a.position, -1);
    EXPECT_EQ(a.batch, -1);
  }
  TrackedAccess a = t.OnAccess(3);  // consumed in 0 → 1
  EXPECT_EQ(a.epoch, 1u);
  EXPECT_EQ(a.began, std::optional<uint32_t>(1));
  EXPECT_EQ(t.OnAccess(0).epoch, 1u);
}

TEST(EpochTracker, ReadAheadAcrossTheBoundaryWithinTheWindow) {
  // 10 samples, batch 2, 2 loaders × prefetch 1 → window of 4 samples.
  EpochTracker t(10, Opts(2, 2, 1));
  std::vector<uint32_t> o0 = Iota(10);
  std::vector<uint32_t> o1 = {5, 1, 9, 3, 7, 0, 8, 2, 6, 4};
  ASSERT_TRUE(t.SetOrder(0, o0).ok());
  ASSERT_TRUE(t.SetOrder(1, o1).ok());
  for (uint32_t s = 0; s < 8; ++s) EXPECT_EQ(t.OnAccess(s).epoch, 0u);
  // Loaders already read the first batch of epoch 1 (samples 5 and 1, both
  // consumed in 0) before the last batch of epoch 0 arrives.
  TrackedAccess a = t.OnAccess(5);
  EXPECT_EQ(a.epoch, 1u);
  EXPECT_EQ(a.began, std::optional<uint32_t>(1));
  EXPECT_EQ(a.batch, 0);
  EXPECT_EQ(t.OnAccess(1).epoch, 1u);
  EXPECT_EQ(t.open_previous_epoch(), std::optional<uint32_t>(0));
  // Late samples of epoch 0 (9 is also in epoch 1's first batch: still 0).
  a = t.OnAccess(8);
  EXPECT_EQ(a.epoch, 0u);
  EXPECT_EQ(a.batch, 4);
  a = t.OnAccess(9);
  EXPECT_EQ(a.epoch, 0u);
  EXPECT_EQ(a.completed, std::optional<uint32_t>(0));
  EXPECT_FALSE(t.open_previous_epoch().has_value());
  // The rest of epoch 1, including 9 again.
  for (size_t i = 2; i < o1.size(); ++i) {
    a = t.OnAccess(o1[i]);
    EXPECT_EQ(a.epoch, 1u) << o1[i];
    EXPECT_EQ(a.batch, static_cast<int64_t>(i / 2));
    EXPECT_FALSE(a.repeat);
  }
  EXPECT_EQ(t.consumed_in_current(), 10u);
}

TEST(EpochTracker, PreviousEpochClosesAfterTheWindow) {
  // drop_last: epoch 0 never reads its last 2 samples (8, 9).
  EpochTracker t(10, Opts(2, 1, 1));  // window = 2 samples
  std::vector<uint32_t> o1 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  ASSERT_TRUE(t.SetOrder(0, Iota(10)).ok());
  ASSERT_TRUE(t.SetOrder(1, o1).ok());
  for (uint32_t s = 0; s < 8; ++s) t.OnAccess(s);
  EXPECT_EQ(t.OnAccess(0).began, std::optional<uint32_t>(1));
  EXPECT_EQ(t.open_previous_epoch(), std::optional<uint32_t>(0));
  for (uint32_t s = 1; s < 8; ++s) EXPECT_EQ(t.OnAccess(s).epoch, 1u);
  EXPECT_FALSE(t.open_previous_epoch().has_value());
  // 8 and 9 now count for epoch 1, not as late arrivals of 0.
  EXPECT_EQ(t.OnAccess(8).epoch, 1u);
  TrackedAccess a = t.OnAccess(9);
  EXPECT_EQ(a.epoch, 1u);
  EXPECT_EQ(a.completed, std::optional<uint32_t>(1));
}

TEST(EpochTracker, RereadFarFromTheEndIsARepeat) {
  EpochTracker t(100, Opts(4, 1, 2));  // window 8
  ASSERT_TRUE(t.SetOrder(0, Iota(100)).ok());
  for (uint32_t s = 0; s < 10; ++s) t.OnAccess(s);
  TrackedAccess a = t.OnAccess(3);  // a second open of sample 3
  EXPECT_EQ(a.epoch, 0u);
  EXPECT_TRUE(a.repeat);
  EXPECT_EQ(a.batch, 0);
  EXPECT_FALSE(a.began.has_value());
  EXPECT_EQ(t.current_epoch(), std::optional<uint32_t>(0));
  EXPECT_EQ(t.consumed_in_current(), 10u);
  // Near the end (within the window) a re-read does begin the next epoch.
  for (uint32_t s = 10; s < 93; ++s) t.OnAccess(s);
  a = t.OnAccess(0);
  EXPECT_EQ(a.began, std::optional<uint32_t>(1));
}

TEST(EpochTracker, ShardOrdersChangeEachEpoch) {
  // A DistributedSampler shard: epoch 0 holds the even samples, epoch 1 a
  // different subset.
  EpochTracker t(10, Opts(1, 1, 1));  // window 1
  std::vector<uint32_t> o0 = {0, 2, 4, 6, 8};
  std::vector<uint32_t> o1 = {9, 4, 7, 1, 0};
  ASSERT_TRUE(t.SetOrder(0, o0).ok());
  ASSERT_TRUE(t.SetOrder(1, o1).ok());
  for (uint32_t s : {0u, 2u}) EXPECT_EQ(t.OnAccess(s).epoch, 0u);
  // A sample outside both shards early in epoch 0: a stray access of 0.
  TrackedAccess a = t.OnAccess(3);
  EXPECT_EQ(a.epoch, 0u);
  EXPECT_EQ(a.position, -1);
  // Sample 9 belongs to epoch 1 only, but epoch 0 is far from complete.
  EXPECT_EQ(t.OnAccess(9).epoch, 0u);
  EXPECT_EQ(t.OnAccess(4).epoch, 0u);
  EXPECT_EQ(t.OnAccess(6).epoch, 0u);
  // 4 of 5 read, window 1: epoch 1's first sample (7, not in shard 0) begins 1.
  a = t.OnAccess(7);
  EXPECT_EQ(a.epoch, 1u);
  EXPECT_EQ(a.began, std::optional<uint32_t>(1));
  EXPECT_EQ(a.position, 2);
  // The late last sample of shard 0.
  a = t.OnAccess(8);
  EXPECT_EQ(a.epoch, 0u);
  EXPECT_EQ(a.completed, std::optional<uint32_t>(0));
  for (uint32_t s : {4u, 1u, 0u}) EXPECT_EQ(t.OnAccess(s).epoch, 1u);
}

TEST(EpochTracker, CompleteEpochWithoutNextOrderAdvancesOnNewSample) {
  EpochTracker t(6, Opts(1, 1, 1));
  ASSERT_TRUE(t.SetOrder(0, {0, 1, 2}).ok());
  for (uint32_t s : {0u, 1u, 2u}) t.OnAccess(s);
  TrackedAccess a = t.OnAccess(5);  // not in 0's order, 0 complete, no order 1
  EXPECT_EQ(a.began, std::optional<uint32_t>(1));
  EXPECT_EQ(a.epoch, 1u);
}

TEST(EpochTracker, ExplicitMarkersOverride) {
  EpochTracker t(4, Opts(1, 1, 1));
  ASSERT_TRUE(t.SetOrder(2, {0, 1, 2, 3}).ok());
  EXPECT_EQ(t.MarkEpoch(2).value(), true);
  EXPECT_EQ(t.MarkEpoch(2).value(), false);
  EXPECT_EQ(t.current_epoch(), std::optional<uint32_t>(2));
  EXPECT_EQ(t.OnAccess(1).epoch, 2u);
  EXPECT_EQ(t.OnAccess(1).repeat, true);  // order 2 far from complete (window 1)
  // The job says epoch 3 starts although 2 is incomplete.
  EXPECT_EQ(t.MarkEpoch(3).value(), true);
  EXPECT_EQ(t.current_epoch(), std::optional<uint32_t>(3));
  EXPECT_EQ(t.OnAccess(1).epoch, 3u);
  Result<bool> back = t.MarkEpoch(1);
  ASSERT_FALSE(back.ok());
  EXPECT_CONTAINS(back.status().message(), "before the current epoch 3");
  // Skipping ahead is allowed.
  EXPECT_EQ(t.MarkEpoch(7).value(), true);
  EXPECT_EQ(t.OnAccess(1).epoch, 7u);
}

// `epoch` K written before `order/K`: reads while K had no order count for
// every sample; once K's order is declared (a subset), only reads of samples
// in it count, so the epoch is not complete before its order is read.
TEST(EpochTracker, AnOrderDeclaredAfterItsEpochBeganCountsOnlyItsSamples) {
  EpochTracker t(8, Opts(1, 1, 1));
  ASSERT_TRUE(t.MarkEpoch(0).value());
  for (uint32_t x : {4, 5, 6, 7}) EXPECT_EQ(t.OnAccess(x).epoch, 0u);  // outside the order below
  EXPECT_EQ(t.consumed_in_current(), 4u);
  ASSERT_TRUE(t.SetOrder(0, {0, 1, 2, 3, 4}).ok());
  EXPECT_EQ(t.consumed_in_current(), 1u) << "only sample 4 is in the order";
  EXPECT_FALSE(t.current_complete());
  for (uint32_t x : {0, 1, 2}) {
    TrackedAccess a = t.OnAccess(x);
    EXPECT_EQ(a.epoch, 0u);
    EXPECT_FALSE(a.completed.has_value()) << "sample " << x;
  }
  TrackedAccess last = t.OnAccess(3);
  EXPECT_EQ(last.completed, std::optional<uint32_t>(0));
  EXPECT_TRUE(t.current_complete());
}

TEST(EpochTracker, FirstAccessStartsTheLowestDeclaredEpoch) {
  EpochTracker t(4, Opts(1, 1, 1));
  ASSERT_TRUE(t.SetOrder(5, {0, 1}).ok());
  ASSERT_TRUE(t.SetOrder(6, {2, 3}).ok());
  TrackedAccess a = t.OnAccess(3);  // only in 6: a resumed job reading ahead? starts 6
  EXPECT_EQ(a.began, std::optional<uint32_t>(6));
  EpochTracker u(4, Opts(1, 1, 1));
  ASSERT_TRUE(u.SetOrder(5, {0, 1}).ok());
  EXPECT_EQ(u.OnAccess(0).began, std::optional<uint32_t>(5));
  EpochTracker v(4, Opts(1, 1, 1));
  EXPECT_EQ(v.OnAccess(0).began, std::optional<uint32_t>(0));
}

// The rules themselves are DeclaredOrders' (tests/unit/declarations); here:
// the tracker applies them with the next epoch's order replaceable, and holds
// only the orders of the open epochs and the future.
TEST(EpochTracker, OrdersFollowTheDeclarationRulesAndAreDroppedAsEpochsPass) {
  EpochTracker t(4, Opts(1, 1, 1));
  ASSERT_TRUE(t.SetOrder(0, {0, 1, 2, 3}).ok());
  ASSERT_TRUE(t.SetOrder(1, {3, 2, 1, 0}).ok());
  t.OnAccess(0);  // epoch 0 begins
  ASSERT_TRUE(t.SetOrder(1, {1, 2}).ok()) << "the next epoch's order may still change";
  EXPECT_TRUE(t.SameOrder(1, {1, 2}));
  EXPECT_EQ(t.OrderSize(1), 2u);
  EXPECT_FALSE(t.SetOrder(0, {3, 2, 1, 0}).ok()) << "begun";
  ASSERT_TRUE(t.SetOrder(2, {0}).ok());
  ASSERT_TRUE(t.SetOrder(3, {0}).ok());
  EXPECT_FALSE(t.CheckOrder(4, {0}).ok()) << "a fifth pending order";
  EXPECT_FALSE(t.SetOrder(4, {0}).ok());
  EXPECT_FALSE(t.HasOrder(4));
  EXPECT_TRUE(t.InPendingOrders(3));
  ASSERT_TRUE(t.MarkEpoch(2).value());
  EXPECT_EQ(t.declared_epochs(), (std::vector<uint32_t>{2, 3}));
  EXPECT_FALSE(t.InPendingOrders(3));
  EXPECT_TRUE(t.SetOrder(4, {0}).ok()) << "room again";
  EXPECT_FALSE(t.MarkEpoch(1).ok()) << "before the current epoch";
}

TEST(EpochTracker, RandomInterleavingWithinWindowCountsEveryEpochExactly) {
  // 3 epochs over 64 samples, loaders read out of order within a window:
  // every access must count for its true epoch.
  const uint32_t n = 64;
  EpochTracker t(n, Opts(4, 2, 2));  // window 16
  std::vector<std::vector<uint32_t>> orders;
  uint32_t seed = 12345;
  auto rnd = [&] { return seed = seed * 1103515245u + 12345u, (seed >> 8); };
  for (int e = 0; e < 3; ++e) {
    std::vector<uint32_t> o = Iota(n);
    for (uint32_t i = n - 1; i > 0; --i) std::swap(o[i], o[rnd() % (i + 1)]);
    orders.push_back(o);
  }
  ASSERT_TRUE(t.SetOrder(0, orders[0]).ok());
  ASSERT_TRUE(t.SetOrder(1, orders[1]).ok());
  // The global stream of (epoch, sample), then local shuffles by swapping
  // neighbours at most 3 apart (well within the window).
  std::vector<std::pair<uint32_t, uint32_t>> stream;
  for (uint32_t e = 0; e < 3; ++e) {
    for (uint32_t s : orders[e]) stream.emplace_back(e, s);
  }
  // (A sample never overtakes its own read of the previous epoch: that order
  // is unknowable.)
  for (size_t i = 0; i + 3 < stream.size(); i += 2) {
    size_t j = i + 1 + rnd() % 3;
    bool same = false;
    for (size_t k = i; k < j; ++k) same = same || stream[k].second == stream[j].second;
    for (size_t k = i + 1; k <= j; ++k) same = same || stream[k].second == stream[i].second;
    if (!same) std::swap(stream[i], stream[j]);
  }
  uint32_t declared = 1;
  for (const auto& [e, s] : stream) {
    if (e >= declared && declared + 1 < 3) {
      ASSERT_TRUE(t.SetOrder(declared + 1, orders[declared + 1]).ok());
      ++declared;
    }
    TrackedAccess a = t.OnAccess(s);
    ASSERT_EQ(a.epoch, e) << "sample " << s;
    ASSERT_FALSE(a.repeat);
  }
}

}  // namespace
}  // namespace epochfs::control
