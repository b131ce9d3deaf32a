// The rules for what a job declares, tested once here: the registry's tracker
// and the cache policies hold their orders in a DeclaredOrders and check
// epoch markers, positions and sample lists with the same functions, so their
// own tests only check that they refuse what these refuse.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "epochfs/declarations/declaration_rules.h"
#include "epochfs/declarations/declared_orders.h"

namespace epochfs::declarations {
namespace {

using V = std::vector<uint32_t>;

// A job of 8 samples and 10 epochs, `current` begun (none: not started).
JobView Job(std::optional<uint32_t> current = std::nullopt) { return {8, 10, current}; }

void ExpectRefused(const Status& s, const std::string& message) {
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_EQ(s.message(), message);
}

// Declares `order` for `epoch` and checks that Check agreed beforehand.
Result<bool> Declare(DeclaredOrders& d, const JobView& job, uint32_t epoch, const V& order) {
  const Status checked = d.Check(job, epoch, order);
  Result<bool> r = d.Declare(job, epoch, order);
  EXPECT_EQ(checked.ok(), r.ok()) << "Check and Declare disagree on epoch " << epoch;
  if (!r.ok()) {
    EXPECT_EQ(checked.message(), r.status().message());
  }
  return r;
}

TEST(DeclaredOrders, StoresAnOrderWithItsPositions) {
  DeclaredOrders d(InUse::kCurrent);
  ASSERT_EQ(Declare(d, Job(), 3, {5, 0, 7}).value(), true);
  const Order* o = d.Get(3);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->idx, (V{5, 0, 7}));
  EXPECT_EQ(o->pos, (std::vector<int32_t>{1, kAbsent, kAbsent, kAbsent, kAbsent, 0, kAbsent, 2}));
  EXPECT_EQ(o->size(), 3u);
  EXPECT_TRUE(o->Holds(7));
  EXPECT_FALSE(o->Holds(1));
  EXPECT_FALSE(o->Holds(8)) << "out of range is not held";
  EXPECT_EQ(d.Get(2), nullptr);
  EXPECT_TRUE(d.Same(3, {5, 0, 7}));
  EXPECT_FALSE(d.Same(3, {0, 5, 7}));
  EXPECT_FALSE(d.Same(4, {5, 0, 7}));
}

TEST(DeclaredOrders, RefusesBadOrdersAndChangesNothing) {
  DeclaredOrders d(InUse::kCurrentAndNext);
  ExpectRefused(Declare(d, {0, 10, std::nullopt}, 0, {0}).status(),
                "write samples before the orders");
  ExpectRefused(Declare(d, Job(), 10, {0}).status(),
                "epoch 10 is beyond the job's last epoch 9 (epochs are 0-based)");
  ExpectRefused(Declare(d, Job(), 0, {}).status(), "order 0: the order is empty");
  ExpectRefused(Declare(d, Job(), 0, {0, 1, 8}).status(),
                "order 0: index 8 at position 2 is out of range (8 samples)");
  ExpectRefused(Declare(d, Job(), 1, {3, 1, 3}).status(),
                "order 1: index 3 appears twice (positions 0 and 2)");
  EXPECT_TRUE(d.empty());
  // Epochs unknown (0): any epoch is within the run.
  EXPECT_TRUE(Declare(d, {8, 0, std::nullopt}, 999, {0}).ok());
}

TEST(DeclaredOrders, TheSameOrderAgainChangesNothingWhateverItsEpoch) {
  DeclaredOrders d(InUse::kCurrentAndNext);
  ASSERT_TRUE(Declare(d, Job(), 4, {1, 2}).ok());
  ASSERT_TRUE(Declare(d, Job(), 5, {2, 1}).ok());
  const Order* held = d.Get(4);
  EXPECT_EQ(Declare(d, Job(5), 4, {1, 2}).value(), false) << "ended, but held as declared";
  EXPECT_EQ(Declare(d, Job(4), 4, {1, 2}).value(), false) << "begun";
  EXPECT_EQ(Declare(d, Job(4), 5, {2, 1}).value(), false) << "in use as the next";
  EXPECT_EQ(d.Get(4), held);
  EXPECT_EQ(d.Get(4)->idx, (V{1, 2}));
}

TEST(DeclaredOrders, OrdersInUseCannotChange) {
  DeclaredOrders tracker(InUse::kCurrent);
  DeclaredOrders policy(InUse::kCurrentAndNext);
  for (DeclaredOrders* d : {&tracker, &policy}) {
    ASSERT_TRUE(Declare(*d, Job(), 2, {0, 1}).ok());
    ASSERT_TRUE(Declare(*d, Job(), 3, {0, 1}).ok());
    ASSERT_TRUE(Declare(*d, Job(), 4, {0, 1}).ok());
    ASSERT_EQ(Declare(*d, Job(), 3, {1, 0}).value(), true) << "not begun: replaced";
    ExpectRefused(Declare(*d, Job(3), 2, {1}).status(), "epoch 2 has ended (current epoch 3)");
    ExpectRefused(Declare(*d, Job(3), 3, {0}).status(),
                  "epoch 3 has begun; its order can no longer change");
    ASSERT_EQ(Declare(*d, Job(3), 5, {0}).value(), true) << "a new future order";
    ASSERT_EQ(Declare(*d, Job(3), 5, {1}).value(), true) << "two ahead: replaced";
    EXPECT_EQ(d->Get(5)->idx, V{1});
    EXPECT_EQ(d->Get(3)->idx, (V{1, 0}));
  }
  // The next epoch's order: replaced for the tracker, in use for a policy.
  const Order* next = tracker.Get(4);
  ASSERT_EQ(Declare(tracker, Job(3), 4, {7}).value(), true);
  EXPECT_EQ(tracker.Get(4), next) << "replaced in place";
  EXPECT_EQ(next->idx, V{7});
  ExpectRefused(Declare(policy, Job(3), 4, {7}).status(),
                "order 4: epoch 4's order is in use and cannot be replaced");
  EXPECT_EQ(policy.Get(4)->idx, (V{0, 1}));
}

TEST(DeclaredOrders, AtMostFourPendingOrders) {
  EXPECT_EQ(kMaxPendingOrders, 4u) << "epochfs-control(7): at most four orders";
  for (InUse in_use : {InUse::kCurrent, InUse::kCurrentAndNext}) {
    DeclaredOrders d(in_use);
    // Before the first epoch every held order is pending.
    for (uint32_t k = 0; k < 4; ++k) ASSERT_TRUE(Declare(d, Job(), k, {k}).ok()) << k;
    EXPECT_EQ(d.Pending(std::nullopt), 4u);
    ExpectRefused(Declare(d, Job(), 4, {4}).status(),
                  "too many orders declared ahead (held: 0, 1, 2, 3); "
                  "declare epoch K+1 during epoch K");
    EXPECT_EQ(d.size(), 4u);
    EXPECT_TRUE(Declare(d, Job(), 3, {5}).ok()) << "replacing a held order adds none";
    // Epoch 1 begins; 0 is kept (its late reads) but no longer pending.
    EXPECT_EQ(d.Pending(1), 3u);
    ASSERT_TRUE(Declare(d, Job(1), 4, {4}).ok());
    EXPECT_EQ(d.Pending(1), 4u);
    ExpectRefused(Declare(d, Job(1), 5, {5}).status(),
                  "too many orders declared ahead (held: 0, 1, 2, 3, 4); "
                  "declare epoch K+1 during epoch K");
    EXPECT_EQ(Declare(d, Job(1), 0, {0}).value(), false) << "the same order: not refused";
    // Epoch 2 begins: 5 fits again.
    EXPECT_TRUE(Declare(d, Job(2), 5, {5}).ok());
    EXPECT_EQ(d.Pending(2), 4u);
    EXPECT_EQ(d.size(), 6u);
  }
}

TEST(DeclaredOrders, DropBeforeKeepsTheNamedOrder) {
  DeclaredOrders d(InUse::kCurrent);
  for (uint32_t k = 0; k < 4; ++k) ASSERT_TRUE(Declare(d, Job(), k, {k}).ok());
  d.DropBefore(3, 1);
  std::vector<uint32_t> held;
  for (const auto& [k, o] : d) held.push_back(k);
  EXPECT_EQ(held, (V{1, 3}));
  d.DropBefore(4);
  EXPECT_TRUE(d.empty());
}

TEST(DeclarationRules, NewJobAndSampleList) {
  EXPECT_TRUE(CheckNewJob(1, 1, false).ok());
  ExpectRefused(CheckNewJob(0, 4, false), "job id 0 is reserved");
  ExpectRefused(CheckNewJob(1, 0, false), "batch_size must be at least 1");
  const Status taken = CheckNewJob(7, 4, true);
  EXPECT_EQ(taken.code(), Code::kExists);
  EXPECT_EQ(taken.message(), "job id 7 is already registered");
  EXPECT_TRUE(CheckSamples(1, false).ok());
  EXPECT_TRUE(CheckSamples(size_t{INT32_MAX}, false).ok());
  ExpectRefused(CheckSamples(size_t{INT32_MAX} + 1, false), "more than 2^31-1 samples");
  ExpectRefused(CheckSamples(0, false), "the sample list is empty");
  EXPECT_EQ(CheckSamples(4, true).code(), Code::kBusy);
}

TEST(DeclarationRules, EpochMarkers) {
  ExpectRefused(CheckSamplesWritten(false, NeedsSamples::kOrder), "write samples before the orders");
  ExpectRefused(CheckSamplesWritten(false, NeedsSamples::kEpochMarker),
                "write samples before the epoch");
  ExpectRefused(CheckSamplesWritten(false, NeedsSamples::kPosition), "write samples first");
  EXPECT_TRUE(CheckSamplesWritten(true, NeedsSamples::kPosition).ok());
  EXPECT_TRUE(CheckEpochInRun(3, 2).ok());
  ExpectRefused(CheckEpochInRun(3, 3), "epoch 3 is beyond the job's last epoch 2 (epochs are 0-based)");
  EXPECT_TRUE(CheckEpochInRun(0, UINT32_MAX).ok()) << "epochs unknown";
  EXPECT_TRUE(CheckEpochMarker(std::nullopt, 0).ok());
  EXPECT_TRUE(CheckEpochMarker(5, 5).ok());
  EXPECT_TRUE(CheckEpochMarker(5, 9).ok()) << "epochs may be skipped";
  ExpectRefused(CheckEpochMarker(5, 4), "4 is before the current epoch 5");
  // A policy's BeginEpoch: the three, in order.
  ExpectRefused(CheckEpochBegins({0, 3, 5}, 9), "write samples before the epoch");
  ExpectRefused(CheckEpochBegins({8, 3, 5}, 4),
                "epoch 4 is beyond the job's last epoch 2 (epochs are 0-based)");
  ExpectRefused(CheckEpochBegins({8, 10, 5}, 4), "4 is before the current epoch 5");
  EXPECT_TRUE(CheckEpochBegins({8, 10, std::nullopt}, 4).ok());
}

TEST(DeclarationRules, PositionReports) {
  EXPECT_EQ(CheckPosition(3, 100, 3, 0).value(), PositionVerdict::kAccept);
  EXPECT_EQ(CheckPosition(3, 100, 3, 100).value(), PositionVerdict::kAccept) << "the end";
  EXPECT_EQ(CheckPosition(3, 0, 2, 500).value(), PositionVerdict::kLate) << "an epoch over";
  ExpectRefused(CheckPosition(3, 100, 3, 101).status(),
                "position 101 is past the end of epoch 3's order (100 samples)");
  ExpectRefused(CheckPosition(3, 0, 3, 0).status(), "epoch 3 has no declared order");
  ExpectRefused(CheckPosition(3, 100, 4, 0).status(), "epoch 4 has not begun (write `epoch` first)");
  ExpectRefused(CheckPosition(std::nullopt, 100, 0, 0).status(),
                "epoch 0 has not begun (write `epoch` first)");
}

}  // namespace
}  // namespace epochfs::declarations
