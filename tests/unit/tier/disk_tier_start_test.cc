// DiskTier's start bounded (disk_tier.h, Open's start_timeout): a start that
// cannot be answered is given up on within the bound and closes what it
// opened once it can go on; the failed tier a mount shows instead.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "../spill/temp_dir.h"
#include "epochfs/tier/disk_tier.h"

namespace epochfs::tier {
// Named, not anonymous: a unity build compiles this file with the others of its binary.
namespace disk_tier_start_test {

using spill::testing::TempDir;

store::LowerKey StartKey(const std::string& rel, uint64_t size) {
  store::LowerKey k;
  k.rel = rel;
  k.version = store::Version{size, 7, 9, 0};
  return k;
}

// A start that never answers, without a hung filesystem: no index, so Open
// scans the data files, and one of them is a FIFO nobody writes (its open
// for reading waits for a writer).
TEST(DiskTierStart, AStartThatNeverAnswersIsGivenUpWithinTheBound) {
  TempDir dir("epochfs-tier-test");
  ASSERT_FALSE(dir.path().empty());
  ASSERT_EQ(::mkdir((dir.path() + "/data").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir.path() + "/data/01").c_str(), 0700), 0);
  const std::string fifo = dir.path() + "/data/01/0000000000000001";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  DiskTierOptions o;
  o.path = dir.path();
  o.size = 64 << 20;
  o.start_timeout = std::chrono::milliseconds(300);
  const auto t0 = std::chrono::steady_clock::now();
  auto opened = DiskTier::Open(o);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), Code::kTimedOut);
  EXPECT_EQ(opened.status().message(),
            "cache.disk_path " + dir.path() + ": its start found no answer within 300 ms");
  EXPECT_LT(took, std::chrono::seconds(60));
  // The start left behind still holds the directory's lock.
  o.start_timeout = std::chrono::milliseconds(0);
  auto second = DiskTier::Open(o);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kBusy) << second.status().message();
  // The disk answers (a writer comes and goes: the scan reads nothing and
  // drops the file); the start finishes, and its tier, abandoned, is closed
  // with its lock: the next Open has the directory.
  const int w = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(w, 0);
  ::close(w);
  bool reopened = false;
  for (int i = 0; i < 600 && !reopened; ++i) {  // at most a minute
    auto again = DiskTier::Open(o);
    if (again.ok()) {
      reopened = true;
      EXPECT_EQ(again.value()->stats().objects, 0u);
      EXPECT_EQ(again.value()->state(), DiskTier::State::kOk);
    } else {
      ASSERT_EQ(again.status().code(), Code::kBusy) << again.status().message();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  EXPECT_TRUE(reopened);
}

TEST(DiskTierStart, FailedAtStartServesAndWritesNothing) {
  DiskTierOptions o;
  o.path = "/nonexistent/cache";
  o.size = 64 << 20;
  std::unique_ptr<DiskTier> t = DiskTier::FailedAtStart(o, "its start did not answer");
  EXPECT_EQ(t->state(), DiskTier::State::kFailed);
  EXPECT_TRUE(t->Start().ok());
  const store::TierStats st = t->stats();
  EXPECT_EQ(st.state, "failed");
  EXPECT_EQ(st.budget, 0u);
  EXPECT_EQ(st.objects, 0u);
  const store::LowerKey a = StartKey("a", 10);
  auto obj = std::make_shared<store::Object>();
  obj->id = a.Id();
  obj->data.assign(10, 'x');
  EXPECT_FALSE(t->Write(a.Id(), a, obj));
  EXPECT_EQ(t->Read(a.Id(), a, a.version), nullptr);
  EXPECT_EQ(t->FileOf(a.Id()), "");
  EXPECT_TRUE(t->Stop());
}

}  // namespace disk_tier_start_test
}  // namespace epochfs::tier
