// Sampler on fake /proc and cgroup trees: no cgroup, cgroup v1 with and
// without a limit, cgroup v2 with a limit on an ancestor, broken files.
#include "epochfs/governor/sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace epochfs::governor {
// Named, not anonymous: a unity build compiles this file with the others of its binary.
namespace sampler_test {

namespace fs = std::filesystem;
constexpr uint64_t kMiB = 1ull << 20;

class FakeTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/epochfs-sampler-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/proc/self");
    fs::create_directories(root_ + "/cg");
    Write("proc/meminfo",
          "MemTotal:       16777216 kB\nMemFree:  100 kB\nMemAvailable:    8388608 kB\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories(fs::path(root_ + "/" + rel).parent_path());
    std::ofstream(root_ + "/" + rel) << text;
  }
  Sampler Make() { return Sampler(root_ + "/proc", root_ + "/cg"); }

  std::string root_;
};

TEST_F(FakeTree, NoCgroupUsesMeminfo) {
  Write("proc/self/cgroup", "0::/\n");
  Result<MemoryReading> r = Make().Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().mem_total, 16ull << 30);
  EXPECT_EQ(r.value().mem_available, 8ull << 30);
  EXPECT_FALSE(r.value().cgroup_limited);
  EXPECT_EQ(r.value().total, 16ull << 30);
  EXPECT_EQ(r.value().available, 8ull << 30);
}

TEST_F(FakeTree, CgroupV1LimitAndWorkingSet) {
  Write("proc/self/cgroup", "5:devices:/\n4:memory:/jobs/a\n0::/\n");
  Write("cg/memory/jobs/a/memory.usage_in_bytes", std::to_string(900 * kMiB) + "\n");
  Write("cg/memory/jobs/a/memory.limit_in_bytes", std::to_string(2048 * kMiB) + "\n");
  // The hierarchical limit (a parent's) is tighter than the cgroup's own.
  Write("cg/memory/jobs/a/memory.stat",
        "cache 1\ninactive_file 5\nhierarchical_memory_limit " + std::to_string(1536 * kMiB) +
            "\ntotal_inactive_file " + std::to_string(100 * kMiB) + "\n");
  Sampler s = Make();
  EXPECT_EQ(s.cgroup_dir(), root_ + "/cg/memory/jobs/a");
  EXPECT_FALSE(s.cgroup_v2());
  Result<MemoryReading> r = s.Read();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().cgroup_limited);
  EXPECT_EQ(r.value().cgroup_limit, 1536 * kMiB);
  EXPECT_EQ(r.value().cgroup_usage, 900 * kMiB);
  EXPECT_EQ(r.value().cgroup_inactive_file, 100 * kMiB);
  EXPECT_EQ(r.value().total, 1536 * kMiB);
  EXPECT_EQ(r.value().available, (1536 - 800) * kMiB);  // limit − (usage − inactive)
}

TEST_F(FakeTree, CgroupV1WithoutLimitIsTheHost) {
  Write("proc/self/cgroup", "4:memory:/\n");
  Write("cg/memory/memory.usage_in_bytes", "123456\n");
  Write("cg/memory/memory.limit_in_bytes", "9223372036854771712\n");
  Write("cg/memory/memory.stat", "hierarchical_memory_limit 9223372036854771712\n");
  Result<MemoryReading> r = Make().Read();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value().cgroup_limited);
  EXPECT_EQ(r.value().total, 16ull << 30);
  EXPECT_EQ(r.value().available, 8ull << 30);
}

TEST_F(FakeTree, CgroupV1NamespacedPathFallsBackToTheMountRoot) {
  Write("proc/self/cgroup", "4:memory:/not/visible/here\n");
  Write("cg/memory/memory.usage_in_bytes", std::to_string(100 * kMiB));
  Write("cg/memory/memory.limit_in_bytes", std::to_string(1024 * kMiB));
  Result<MemoryReading> r = Make().Read();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().cgroup_limited);
  EXPECT_EQ(r.value().available, 924 * kMiB);
}

TEST_F(FakeTree, CgroupV2AncestorLimit) {
  Write("proc/self/cgroup", "0::/svc/epochfs\n");
  Write("cg/svc/memory.max", std::to_string(1024 * kMiB) + "\n");
  Write("cg/svc/epochfs/memory.max", "max\n");
  Write("cg/svc/epochfs/memory.current", std::to_string(600 * kMiB) + "\n");
  Write("cg/svc/epochfs/memory.stat", "anon 1\ninactive_file " + std::to_string(200 * kMiB) + "\n");
  Sampler s = Make();
  EXPECT_TRUE(s.cgroup_v2());
  Result<MemoryReading> r = s.Read();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().cgroup_limit, 1024 * kMiB);
  EXPECT_EQ(r.value().available, 624 * kMiB);
}

TEST_F(FakeTree, GarbageMeansNoLimitAndNeverCrashes) {
  Write("proc/self/cgroup", "garbage\n::\n4:memory\n4:memory:/x\n");
  Write("cg/memory/x/memory.usage_in_bytes", "lots\n");
  Write("cg/memory/x/memory.limit_in_bytes", "-5\n");
  Write("cg/memory/x/memory.stat", "hierarchical_memory_limit\ntotal_inactive_file x\n");
  Result<MemoryReading> r = Make().Read();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value().cgroup_limited);
  EXPECT_EQ(r.value().available, 8ull << 30);
  // Usage above the limit: nothing available, no underflow.
  Write("cg/memory/x/memory.usage_in_bytes", std::to_string(3000 * kMiB));
  Write("cg/memory/x/memory.limit_in_bytes", std::to_string(2000 * kMiB));
  Write("cg/memory/x/memory.stat", "");
  r = Make().Read();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().cgroup_limited);
  EXPECT_EQ(r.value().available, 0u);
}

TEST_F(FakeTree, MissingMeminfoIsAnError) {
  fs::remove(root_ + "/proc/meminfo");
  Result<MemoryReading> r = Make().Read();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kIoError);
}

TEST(Sampler, TheRealMachineReadsSomething) {
  Result<MemoryReading> r = Sampler().Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r.value().total, 0u);
  EXPECT_LE(r.value().available, r.value().total);
}

}  // namespace sampler_test
}  // namespace epochfs::governor
