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

// A file refillable in pieces: read back in the pieces lost while the gate
// is open, and while it is shut at a first loss of a few pages; while shut,
// a loss from the file's start, a new loss once its pieces have cost half
// of it, or its pieces lost over again within one loss, is read back whole.
TEST(HandoverGate, WhileShutAFileLostFromItsStartOrLosingPagesAgainIsRefilledWhole) {
  HandoverGate g;
  constexpr uint64_t kFile = 160;  // a file of 160 bytes; half of it 80
  EXPECT_FALSE(g.RefillsWhole(1, kFile, true, true, kBudget, 0)) << "open: pieces";
  g.LostPieces(1, 80, 0);
  EXPECT_FALSE(g.RefillsWhole(1, kFile, true, false, kBudget, 0)) << "open: pieces";
  EXPECT_DOUBLE_EQ(g.FileLostBytes(1, 0), 80.0);
  EXPECT_DOUBLE_EQ(g.LostBytes(0), 80.0) << "the gate counts pieces too";
  g.Lost(20, 0);  // 100: shut
  ASSERT_FALSE(g.Open(kBudget, 0));
  EXPECT_TRUE(g.RefillsWhole(1, kFile, true, false, kBudget, 0)) << "shut, lost half before";
  EXPECT_FALSE(g.RefillsWhole(1, kFile, false, false, kBudget, 0)) << "the same loss: 80";
  EXPECT_FALSE(g.RefillsWhole(2, kFile, true, false, kBudget, 0)) << "shut, a first loss";
  EXPECT_TRUE(g.RefillsWhole(2, kFile, true, true, kBudget, 0)) << "lost from its start";
  EXPECT_FALSE(g.RefillsWhole(2, kFile, false, true, kBudget, 0)) << "a loss going on";
  g.LostPieces(2, 79, 0);
  EXPECT_FALSE(g.RefillsWhole(2, kFile, true, false, kBudget, 0)) << "79 < 80";
  g.LostPieces(2, 1, 0);
  EXPECT_TRUE(g.RefillsWhole(2, kFile, true, false, kBudget, 0)) << "80: again";
  g.LostPieces(2, 80, 0);
  EXPECT_FALSE(g.RefillsWhole(2, kFile, false, false, kBudget, 0)) << "160: the file, once";
  g.LostPieces(2, 1, 0);
  EXPECT_TRUE(g.RefillsWhole(2, kFile, false, false, kBudget, 0)) << "past it: lost over";
  // Read back whole: the daemon's again, its losses forgotten (not the gate's).
  g.Lost(kFile, 0);
  g.Forget(2);
  EXPECT_DOUBLE_EQ(g.FileLostBytes(2, 0), 0.0);
  EXPECT_FALSE(g.RefillsWhole(2, kFile, true, false, kBudget, 0));
  // A file's losses halve as the gate's do (501 lost: 250.5, 125.25, 62.6).
  const uint64_t h = HandoverGate::kHalfLifeNs;
  EXPECT_FALSE(g.Open(kBudget, h));
  EXPECT_FALSE(g.RefillsWhole(1, kFile, true, false, kBudget, h)) << "80 is 40 after a minute";
  EXPECT_TRUE(g.Open(kBudget, 3 * h));
  EXPECT_FALSE(g.RefillsWhole(1, kFile, true, true, kBudget, 3 * h)) << "open: pieces, always";
}

TEST(HandoverGate, RemembersABoundedNumberOfFiles) {
  HandoverGate g;
  for (uint64_t id = 0; id < 3 * HandoverGate::kMaxFiles; ++id) g.LostPieces(id, 1, id);
  EXPECT_LE(g.files(), HandoverGate::kMaxFiles);
  const uint64_t last = 3 * HandoverGate::kMaxFiles - 1;
  EXPECT_DOUBLE_EQ(g.FileLostBytes(last, last), 1.0) << "the newest is kept";
  EXPECT_DOUBLE_EQ(g.FileLostBytes(0, last), 0.0) << "the oldest forgotten";
}

}  // namespace epochfs::store::handover_gate_test
