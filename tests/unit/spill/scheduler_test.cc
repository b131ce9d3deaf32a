// SpillScheduler on a real store: progress reports are coalesced per job
// (only the latest counts, however many one job writes) and the jobs with a
// report waiting are served in turn, so one user's report loop cannot hold
// back another's. Runs on a real disk directory under /var/tmp (O_DIRECT).
#include "epochfs/spill/scheduler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "temp_dir.h"

namespace epochfs::spill {
namespace scheduler_test_cases {

using testing::TempDir;

std::unique_ptr<SpillStore> StoreWithFiles(const std::string& dir, int files) {
  SpillOptions o;
  o.dir = dir + "/spill";
  o.chunk_bytes = 8192;
  o.staging_bytes = 64 * 8192;
  o.queue_depth = 4;
  auto r = SpillStore::Open(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return nullptr;
  std::unique_ptr<SpillStore> s = std::move(r).value();
  std::vector<uint8_t> data(8192, 7);
  for (int i = 0; i < files; ++i) {
    auto f = s->OpenFile("f" + std::to_string(i), true, false, false, 0644, getuid(), getgid());
    EXPECT_TRUE(f.ok());
    EXPECT_TRUE(f.value()->Write(0, data).ok());
  }
  return s;
}

std::vector<std::string> Schedule() {
  return {"f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7"};
}

TEST(SpillScheduler, OneJobsReportLoopIsCoalescedAndAnotherJobIsServed) {
  TempDir tmp("epochfs-sched-test");
  auto store = StoreWithFiles(tmp.path(), 8);
  ASSERT_NE(store, nullptr);
  SpillScheduler sched(*store, {.num_prefetch = 2, .num_writeout = 2});
  sched.SetSchedule("loop", 0, Schedule());
  sched.SetSchedule("other", 0, Schedule());
  // Before the thread runs: 10,000 reports of one job, then one of another.
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(sched.Progress("loop", i % 8).ok());
  ASSERT_TRUE(sched.Progress("other", 3).ok());
  sched.Start();
  sched.WaitIdle();
  Result<SpillJobStatus> loop = sched.JobStatus("loop");
  Result<SpillJobStatus> other = sched.JobStatus("other");
  ASSERT_TRUE(loop.ok() && other.ok());
  EXPECT_EQ(loop.value().reports, 10000u);
  EXPECT_EQ(loop.value().applied, 10000u);  // every report dealt with...
  EXPECT_EQ(loop.value().coalesced, 9999u);  // ...all but the last by the last
  EXPECT_EQ(loop.value().progress, 7u);
  // One plan applied for the loop: two files fetched at most, not 20,000.
  EXPECT_LE(loop.value().prefetches, 2u);
  EXPECT_EQ(other.value().reports, 1u);
  EXPECT_EQ(other.value().applied, 1u);
  EXPECT_EQ(other.value().coalesced, 0u);
  EXPECT_LE(other.value().prefetches, 2u);
  sched.Stop();
}

TEST(SpillScheduler, ReportsAfterTheTurnAreEachApplied) {
  TempDir tmp("epochfs-sched-test");
  auto store = StoreWithFiles(tmp.path(), 8);
  ASSERT_NE(store, nullptr);
  SpillScheduler sched(*store, {.num_prefetch = 2, .num_writeout = 2});
  sched.Start();
  sched.SetSchedule("job", 0, Schedule());
  for (uint64_t step : {1, 3, 5}) {
    ASSERT_TRUE(sched.Progress("job", step).ok());
    sched.WaitIdle();
  }
  Result<SpillJobStatus> st = sched.JobStatus("job");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st.value().reports, 3u);
  EXPECT_EQ(st.value().applied, 3u);
  EXPECT_EQ(st.value().coalesced, 0u);
  // After step 5 the next two steps' files are in RAM.
  EXPECT_TRUE(store->Resident("f6"));
  EXPECT_TRUE(store->Resident("f7"));
  EXPECT_FALSE(sched.Progress("job", 8).ok());  // outside the schedule
  sched.Stop();
}

}  // namespace scheduler_test_cases
}  // namespace epochfs::spill
