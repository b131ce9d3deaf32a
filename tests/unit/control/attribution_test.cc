#include "epochfs/control/attribution.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "epochfs/control/control_parse.h"
#include "fake_proc_reader.h"
#include "test_util.h"

namespace epochfs::control {
namespace {

using testing::FakeProcReader;
using testing::FakeProcTable;

class AttributionTest : public ::testing::Test {
 protected:
  AttributionTest() {
    procs_.Spawn(1, 0, 1);        // init
    procs_.Spawn(50, 1, 10);      // a shell
    procs_.Spawn(100, 50, 1000);  // the training process (registered)
    procs_.Spawn(101, 100, 1001); // DataLoader worker
    procs_.Spawn(102, 101, 1002); // its child (e.g. a decoder subprocess)
    procs_.Spawn(200, 50, 2000);  // an unrelated reader
  }
  Attributor Make(AttributorOptions o = {}) {
    return Attributor(std::make_unique<FakeProcReader>(&procs_), o);
  }
  FakeProcTable procs_;
};

TEST_F(AttributionTest, RegisteredPidAndDescendants) {
  Attributor a = Make();
  ASSERT_TRUE(a.AddPid(7, 100).ok());
  EXPECT_EQ(a.Lookup(100), 7u);
  EXPECT_EQ(a.Lookup(101), 7u);
  EXPECT_EQ(a.Lookup(102), 7u);
  EXPECT_EQ(a.Lookup(200), kNoJob);
  EXPECT_EQ(a.Lookup(50), kNoJob);
  EXPECT_EQ(a.Lookup(1), kNoJob);
  EXPECT_EQ(a.Lookup(12345), kNoJob);  // no such process
  EXPECT_EQ(a.Pids(7), std::vector<pid_t>{100});
}

TEST_F(AttributionTest, PidZeroIsSkippedWithoutReadingProc) {
  Attributor a = Make();
  ASSERT_TRUE(a.AddPid(7, 100).ok());
  int before = procs_.reads();
  EXPECT_EQ(a.Lookup(0), kNoJob);
  EXPECT_EQ(a.Lookup(-1), kNoJob);
  EXPECT_EQ(procs_.reads(), before);
  EXPECT_FALSE(a.AddPid(7, 0).ok());
}

TEST_F(AttributionTest, CachedWorkerSurvivesItsParentsExit) {
  Attributor a = Make();
  ASSERT_TRUE(a.AddPid(7, 100).ok());
  EXPECT_EQ(a.Lookup(101), 7u);
  procs_.Exit(100);
  procs_.Reparent(101, 1);
  EXPECT_EQ(a.Lookup(101), 7u);
  // Uncached descendants are still found through the cached worker.
  procs_.Spawn(103, 101, 1003);
  EXPECT_EQ(a.Lookup(103), 7u);
}

TEST_F(AttributionTest, ReusedPidIsNotMisattributed) {
  Attributor a = Make();
  ASSERT_TRUE(a.AddPid(7, 100).ok());
  EXPECT_EQ(a.Lookup(101), 7u);
  // The worker exits; an unrelated process gets pid 101 (later start time).
  procs_.Exit(101);
  procs_.Spawn(101, 50, 5000);
  EXPECT_EQ(a.Lookup(101), kNoJob);
  // The registered process itself exits and its pid is reused.
  procs_.Exit(100);
  procs_.Spawn(100, 50, 6000);
  EXPECT_EQ(a.Lookup(100), kNoJob);
  procs_.Spawn(104, 100, 6001);
  EXPECT_EQ(a.Lookup(104), kNoJob);
  // Registering the new holder of pid 100 (another job) replaces the stale entry.
  EXPECT_TRUE(a.AddPid(8, 100).ok());
  EXPECT_EQ(a.Lookup(104), 8u);
}

TEST_F(AttributionTest, RegistrationDropsNegativeEntries) {
  Attributor a = Make();
  EXPECT_EQ(a.Lookup(102), kNoJob);  // cached as "no job" along its chain
  EXPECT_GT(a.cache_size(), 0u);
  ASSERT_TRUE(a.AddPid(9, 101).ok());
  EXPECT_EQ(a.Lookup(102), 9u);
  EXPECT_EQ(a.Lookup(100), kNoJob);  // the parent is not part of the job
}

TEST_F(AttributionTest, AddPidErrors) {
  Attributor a = Make();
  Status s = a.AddPid(7, 4242);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_CONTAINS(s.message(), "pid 4242: no such process");
  ASSERT_TRUE(a.AddPid(7, 100).ok());
  EXPECT_TRUE(a.AddPid(7, 100).ok());  // idempotent
  s = a.AddPid(8, 100);
  EXPECT_CONTAINS(s.message(), "pid 100 is registered to another job");
  // All or nothing.
  s = a.AddPids(8, {200, 4242});
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(a.Pids(8).empty());
  EXPECT_EQ(a.Lookup(200), kNoJob);
}

TEST_F(AttributionTest, RemoveJobForgetsPidsAndCache) {
  Attributor a = Make();
  ASSERT_TRUE(a.AddPid(7, 100).ok());
  EXPECT_EQ(a.Lookup(102), 7u);
  a.RemoveJob(7);
  EXPECT_TRUE(a.Pids(7).empty());
  EXPECT_EQ(a.Lookup(102), kNoJob);
  EXPECT_EQ(a.Lookup(100), kNoJob);
}

TEST_F(AttributionTest, CacheIsBoundedAndDepthLimited) {
  AttributorOptions o;
  o.cache_capacity = 4;
  o.max_depth = 3;
  Attributor a = Make(o);
  ASSERT_TRUE(a.AddPid(7, 100).ok());
  for (pid_t p = 1000; p < 1050; ++p) {
    procs_.Spawn(p, 100, static_cast<uint64_t>(p) * 10);
    EXPECT_EQ(a.Lookup(p), 7u);
    EXPECT_LE(a.cache_size(), 4u);
  }
  // A chain deeper than max_depth from the registered pid is not found.
  pid_t parent = 100;
  for (pid_t p = 3000; p < 3006; ++p) {
    procs_.Spawn(p, parent, static_cast<uint64_t>(p));
    parent = p;
  }
  EXPECT_EQ(a.Lookup(3005), kNoJob);
  EXPECT_EQ(a.Lookup(3001), 7u);
  // A corrupt table with a self-parent does not loop.
  procs_.Spawn(4000, 4000, 1);
  EXPECT_EQ(a.Lookup(4000), kNoJob);
}

TEST_F(AttributionTest, ConcurrentLookupsAndRegistrations) {
  Attributor a = Make();
  for (pid_t p = 500; p < 600; ++p) procs_.Spawn(p, 100 + (p % 2) * 100, p);  // under 100 or 200
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  ASSERT_TRUE(a.AddPid(7, 100).ok());
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      while (!stop.load()) {
        for (pid_t p = 500 + t; p < 600; p += 4) {
          JobId j = a.Lookup(p);
          if (p % 2 == 0 && j != 7) wrong.fetch_add(1);
          if (p % 2 == 1 && j != kNoJob && j != 8) wrong.fetch_add(1);
        }
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(a.AddPid(8, 200).ok());
    a.RemoveJob(8);
  }
  stop = true;
  for (auto& th : readers) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(RealProcReader, ReadsOwnStat) {
  auto proc = MakeProcReader();
  Result<ProcStat> st = proc->Stat(getpid());
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st.value().ppid, getppid());
  EXPECT_GT(st.value().start_time, 0u);
  Result<ProcStat> again = proc->Stat(getpid());
  EXPECT_EQ(again.value().start_time, st.value().start_time);
  EXPECT_EQ(proc->Stat(0).status().code(), Code::kNotFound);
  EXPECT_EQ(proc->Stat(kMaxPid + 1).status().code(), Code::kNotFound);
}

TEST(RealProcReader, AProcessGoneIsNotFoundThoughItsStatWasRead) {
  auto proc = MakeProcReader();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();  // killed by the parent
    _exit(0);
  }
  for (int i = 0; i < 3; ++i) {  // read once by path, then through the held descriptor
    Result<ProcStat> st = proc->Stat(child);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    EXPECT_EQ(st.value().ppid, getpid());
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(proc->Stat(child).status().code(), Code::kNotFound);
  EXPECT_EQ(proc->Stat(getpid()).value().ppid, getppid());
}

TEST(RealProcReader, ReadsOwnOwner) {
  auto proc = MakeProcReader();
  Result<ProcOwner> o = proc->Owner(getpid());
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o.value().real, getuid());
  EXPECT_EQ(o.value().effective, geteuid());
  EXPECT_EQ(proc->Owner(0).status().code(), Code::kNotFound);
  EXPECT_EQ(proc->Owner(kMaxPid + 1).status().code(), Code::kNotFound);
}

TEST(RealProcReader, ParsesCommWithSpacesAndParens) {
  char dir[] = "/tmp/epochfs_proc_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string d = std::string(dir) + "/42";
  ASSERT_EQ(mkdir(d.c_str(), 0700), 0);
  FILE* f = fopen((d + "/stat").c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("42 (a) b (c) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 2 3\n", f);
  fclose(f);
  auto proc = MakeProcReader(dir);
  Result<ProcStat> st = proc->Stat(42);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st.value().ppid, 7);
  EXPECT_EQ(st.value().start_time, 987654u);
  EXPECT_EQ(proc->Stat(43).status().code(), Code::kNotFound);
  unlink((d + "/stat").c_str());
  rmdir(d.c_str());
  rmdir(dir);
}

TEST(RealProcReader, ForkedChildIsAttributedToTheRegisteredParent) {
  Attributor a(MakeProcReader());
  ASSERT_TRUE(a.AddPid(3, getpid()).ok());
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();  // killed by the parent
    _exit(0);
  }
  EXPECT_EQ(a.Lookup(child), 3u);
  EXPECT_EQ(a.Lookup(getppid()), kNoJob);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(a.Lookup(child), kNoJob);  // gone: not attributable any more
}

}  // namespace
}  // namespace epochfs::control
