// HandoverGate (store/handover_gate.h): the kernel's losses of handed-over
// bytes, decayed, against the budget; and CacheFront keeping its copy while
// the gate is shut.
#include "epochfs/store/handover_gate.h"

#include <gtest/gtest.h>

namespace epochfs::store::handover_gate_test {

constexpr uint64_t kSec = 1000ull * 1000 * 1000;
constexpr uint64_t kBudget = 800;  // shut from 100 lost bytes on

TEST(HandoverGate, OpenUntilTheLossesReachAnEighthOfTheBudget) {
  HandoverGate g;
  EXPECT_TRUE(g.Open(kBudget, 0));
  g.Lost(60, 10 * kSec);
  EXPECT_TRUE(g.Open(kBudget, 10 * kSec)) << "60 < 100";
  g.Lost(39, 10 * kSec);
  EXPECT_TRUE(g.Open(kBudget, 10 * kSec)) << "99 < 100";
  g.Lost(1, 10 * kSec);
  EXPECT_FALSE(g.Open(kBudget, 10 * kSec)) << "100 lost: the kernel keeps dropping";
  EXPECT_TRUE(g.Open(8 * kBudget, 10 * kSec)) << "a larger budget bears more";
  EXPECT_DOUBLE_EQ(g.LostBytes(10 * kSec), 100.0);
  g.Lost(0, 10 * kSec);
  EXPECT_DOUBLE_EQ(g.LostBytes(10 * kSec), 100.0) << "nothing lost changes nothing";
}

TEST(HandoverGate, LossesHalveEachHalfLifeAndTheGateOpensAgain) {
  HandoverGate g;
  g.Lost(400, 0);  // half the budget at once (a drop_caches)
  const uint64_t h = HandoverGate::kHalfLifeNs;
  EXPECT_DOUBLE_EQ(g.LostBytes(h), 200.0);
  EXPECT_DOUBLE_EQ(g.LostBytes(2 * h), 100.0);
  EXPECT_FALSE(g.Open(kBudget, 2 * h)) << "exactly an eighth: still shut";
  EXPECT_FALSE(g.Open(kBudget, 2 * h - 1));
  EXPECT_TRUE(g.Open(kBudget, 2 * h + kSec)) << "decayed below an eighth";
  // A loss then adds to what is left of the earlier ones.
  g.Lost(50, 3 * h);
  EXPECT_DOUBLE_EQ(g.LostBytes(3 * h), 100.0);
  EXPECT_FALSE(g.Open(kBudget, 3 * h));
  // A time before the last loss (another thread's clock read earlier) decays
  // nothing and never adds.
  EXPECT_DOUBLE_EQ(g.LostBytes(h), 100.0);
}

TEST(HandoverGate, ABudgetOfNothingShutsAtTheFirstLoss) {
  HandoverGate g;
  EXPECT_TRUE(g.Open(0, 0));
  g.Lost(1, 0);
  EXPECT_FALSE(g.Open(0, 0));
}

}  // namespace epochfs::store::handover_gate_test
