// WarmProgress: `epochfs warm` reports through .epochfs/warm (rows per
// process, per-user views and bounds, rows of ended processes), and the
// tree's file and stats rows are tested in control_tree_test.cc.
#include "epochfs/control/warm_progress.h"

#include <gtest/gtest.h>

#include <set>

namespace epochfs::control {
namespace warm_progress_test {

constexpr uid_t kAlice = 1000;
constexpr uid_t kBob = 1001;

class WarmProgressTest : public ::testing::Test {
 protected:
  WarmProgressTest() : warm_([this](pid_t pid) { return alive_.count(pid) != 0; }) {}
  Caller Call(uid_t uid, pid_t pid) {
    alive_.insert(pid);
    return Caller{uid, uid, pid};
  }
  std::set<pid_t> alive_;
  WarmProgress warm_;
};

TEST_F(WarmProgressTest, AReportReplacesTheWritersRow) {
  const Caller a = Call(kAlice, 10);
  ASSERT_TRUE(warm_.Report(a, "3 10 300 1000 0 walking\n").ok());
  ASSERT_TRUE(warm_.Report(a, "7 12 700 1200 1 reading\n").ok());
  auto rows = warm_.Rows(kAlice);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].pid, 10);
  EXPECT_EQ(rows[0].files_done, 7u);
  EXPECT_EQ(rows[0].files_total, 12u);
  EXPECT_EQ(rows[0].bytes_done, 700u);
  EXPECT_EQ(rows[0].bytes_total, 1200u);
  EXPECT_EQ(rows[0].errors, 1u);
  EXPECT_EQ(rows[0].state, "reading");
  nlohmann::json j = warm_.Json(kAlice);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["files_done"], 7);
  EXPECT_EQ(j[0]["bytes_total"], 1200);
  EXPECT_EQ(j[0]["running"], true);
}

TEST_F(WarmProgressTest, BadReportsAreRefusedAndChangeNothing) {
  const Caller a = Call(kAlice, 10);
  ASSERT_TRUE(warm_.Report(a, "1 2 3 4 0 reading").ok());
  for (const char* bad : {"", "1 2 3 4 0", "1 2 3 4 0 sleeping", "x 2 3 4 0 done",
                          "3 2 3 4 0 done", "1 2 5 4 0 done", "1 2 3 4 0 done\n1 2 3 4 0 done",
                          "-1 2 3 4 0 done", "1 2 3 4 0 done extra"}) {
    EXPECT_EQ(warm_.Report(a, bad).code(), Code::kInvalidArgument) << bad;
  }
  auto rows = warm_.Rows(0);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].bytes_done, 3u);
  EXPECT_EQ(warm_.Report(Caller{kAlice, kAlice, 0}, "1 2 3 4 0 done").code(),
            Code::kNotPermitted);
}

TEST_F(WarmProgressTest, EachUserSeesOwnRowsRootSeesAll) {
  ASSERT_TRUE(warm_.Report(Call(kAlice, 10), "1 2 3 4 0 reading").ok());
  ASSERT_TRUE(warm_.Report(Call(kBob, 11), "0 5 0 50 0 walking").ok());
  EXPECT_EQ(warm_.Rows(0).size(), 2u);
  ASSERT_EQ(warm_.Rows(kBob).size(), 1u);
  EXPECT_EQ(warm_.Rows(kBob)[0].pid, 11);
  EXPECT_EQ(warm_.Rows(kAlice)[0].pid, 10);
}

TEST_F(WarmProgressTest, EndedProcessesLeaveOnlyFinishedRows) {
  ASSERT_TRUE(warm_.Report(Call(kAlice, 10), "2 2 20 20 0 done").ok());
  ASSERT_TRUE(warm_.Report(Call(kAlice, 11), "1 2 10 20 0 reading").ok());
  alive_.clear();
  auto rows = warm_.Rows(kAlice);
  ASSERT_EQ(rows.size(), 1u);  // the killed one says nothing any more
  EXPECT_EQ(rows[0].pid, 10);
  EXPECT_TRUE(rows[0].ended);
  EXPECT_EQ(warm_.Json(kAlice)[0]["running"], false);
  // The newest kMaxFinished finished rows of a user stay.
  for (pid_t p = 20; p < 30; ++p) {
    ASSERT_TRUE(warm_.Report(Call(kAlice, p), "1 1 1 1 0 done").ok());
    alive_.erase(p);
  }
  rows = warm_.Rows(kAlice);
  ASSERT_EQ(rows.size(), WarmProgress::kMaxFinished);
  EXPECT_EQ(rows.back().pid, 29);
  EXPECT_EQ(rows.front().pid, 26);
}

TEST_F(WarmProgressTest, AUsersRunningRowsAreBounded) {
  for (size_t i = 0; i < WarmProgress::kMaxRunningPerUser; ++i) {
    ASSERT_TRUE(warm_.Report(Call(kAlice, 100 + pid_t(i)), "0 1 0 1 0 walking").ok());
  }
  EXPECT_EQ(warm_.Report(Call(kAlice, 200), "0 1 0 1 0 walking").code(), Code::kNoSpace);
  EXPECT_TRUE(warm_.Report(Call(kAlice, 100), "1 1 1 1 0 done").ok());  // its own row
  EXPECT_TRUE(warm_.Report(Call(0, 300), "0 1 0 1 0 walking").ok());   // root: unbounded
  alive_.erase(101);
  EXPECT_TRUE(warm_.Report(Call(kAlice, 200), "0 1 0 1 0 walking").ok());  // a slot freed
}

}  // namespace warm_progress_test
}  // namespace epochfs::control
