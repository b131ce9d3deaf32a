// PlanAfterStep: seed 001's prefetch / write-out windows, by hand.
#include "epochfs/spill/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace epochfs::spill {
namespace {

using V = std::vector<std::string>;

// Forward over layers a b c d, backward d c b a: 8 steps.
const V kFwdBwd = {"a", "b", "c", "d", "d", "c", "b", "a"};

TEST(PlanAfterStep, EmptyScheduleGivesNothing) {
  SchedulePlan p = PlanAfterStep({}, -1, 2, 2);
  EXPECT_TRUE(p.prefetch.empty());
  EXPECT_TRUE(p.writeout.empty());
}

TEST(PlanAfterStep, BeforeTheFirstStepPrefetchesTheFirstSteps) {
  SchedulePlan p = PlanAfterStep(kFwdBwd, -1, 2, 2);
  EXPECT_EQ(p.prefetch, (V{"a", "b"}));
  EXPECT_EQ(p.writeout, (V{"c", "d"}));
}

TEST(PlanAfterStep, MiddleOfTheForwardPass) {
  // After step 1 (b): next steps 2 (c), 3 (d); c and d stay; a and b go.
  SchedulePlan p = PlanAfterStep(kFwdBwd, 1, 2, 2);
  EXPECT_EQ(p.prefetch, (V{"c", "d"}));
  EXPECT_EQ(p.writeout, (V{"a", "b"}));
}

TEST(PlanAfterStep, AFileUsedTwiceInTheWindowIsListedOnce) {
  // After step 2 (c): next are d (3), d (4), c (5) with windows of 3.
  SchedulePlan p = PlanAfterStep(kFwdBwd, 2, 3, 3);
  EXPECT_EQ(p.prefetch, (V{"d", "c"}));
  EXPECT_EQ(p.writeout, (V{"a", "b"}));
}

TEST(PlanAfterStep, WindowsWrapIntoTheNextIteration) {
  // After the last step (7, a) come steps 0 (a) and 1 (b) again.
  SchedulePlan p = PlanAfterStep(kFwdBwd, 7, 2, 2);
  EXPECT_EQ(p.prefetch, (V{"a", "b"}));
  EXPECT_EQ(p.writeout, (V{"c", "d"}));
}

TEST(PlanAfterStep, WideWriteOutWindowKeepsMore) {
  // num_writeout 4 after step 0: steps 1..4 use b c d d: only a goes.
  SchedulePlan p = PlanAfterStep(kFwdBwd, 0, 1, 4);
  EXPECT_EQ(p.prefetch, (V{"b"}));
  EXPECT_EQ(p.writeout, (V{"a"}));
}

TEST(PlanAfterStep, PrefetchedFilesAreNeverWrittenOut) {
  // num_writeout 0 would write out everything, but the prefetch window wins.
  SchedulePlan p = PlanAfterStep(kFwdBwd, 0, 2, 0);
  EXPECT_EQ(p.prefetch, (V{"b", "c"}));
  EXPECT_EQ(p.writeout, (V{"a", "d"}));
}

TEST(PlanAfterStep, WindowsLongerThanTheScheduleCoverItOnce) {
  SchedulePlan p = PlanAfterStep({"x", "y"}, 0, 10, 10);
  EXPECT_EQ(p.prefetch, (V{"y", "x"}));
  EXPECT_TRUE(p.writeout.empty());
}

TEST(PlanAfterStep, ListsAreDisjointAndCoverOnlyScheduledFiles) {
  for (int64_t k = -1; k < static_cast<int64_t>(kFwdBwd.size()); ++k) {
    for (uint32_t pf = 0; pf < 5; ++pf) {
      for (uint32_t wo = 0; wo < 5; ++wo) {
        SchedulePlan p = PlanAfterStep(kFwdBwd, k, pf, wo);
        for (const auto& f : p.prefetch) {
          EXPECT_EQ(std::count(p.writeout.begin(), p.writeout.end(), f), 0) << k << pf << wo;
          EXPECT_EQ(std::count(p.prefetch.begin(), p.prefetch.end(), f), 1);
        }
        // Nothing used within num_writeout steps is written out.
        for (uint32_t i = 1; i <= wo && i <= kFwdBwd.size(); ++i) {
          const std::string& f = kFwdBwd[static_cast<size_t>(k + i) % kFwdBwd.size()];
          EXPECT_EQ(std::count(p.writeout.begin(), p.writeout.end(), f), 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace epochfs::spill
