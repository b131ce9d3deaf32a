// PassTable (src/fs/pass_table.h): a READ joins the inode's pass; the table
// keeps at most max_passes passes and max_held bytes held outside the RAM tier,
// dropping the oldest first.
#include "pass_table.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace epochfs::fs {
namespace {

constexpr uint64_t kGen = 1;  // the node generation of the passes below (but the last test's)

std::shared_ptr<OpenFile> File() {
  auto f = std::make_shared<OpenFile>();
  f->kind = OpenFile::Kind::kObject;
  return f;
}

TEST(PassTable, ReadsJoinTheirInodesPassUntilOffsetZeroComesAgain) {
  PassTable t(4, 1000);
  EXPECT_EQ(t.Join(7, kGen, 0), nullptr);
  auto a = File();
  t.Put(7, kGen, a, 0, 0);
  EXPECT_EQ(t.Join(7, kGen, 4096), a);
  EXPECT_EQ(t.Join(8, kGen, 4096), nullptr);
  EXPECT_EQ(t.Join(7, kGen, 0), nullptr) << "offset 0 served: the file is read again";
  auto b = File();
  t.Put(7, kGen, b, 0, 0);
  EXPECT_EQ(t.Join(7, kGen, 8192), b);
  EXPECT_EQ(t.size(), 1u);
}

// An object handed over to the kernel ends its pass, and only its own: a
// newer pass of the inode stays.
TEST(PassTable, EndEndsOnlyThePassOfThatFile) {
  int ended = 0;
  PassTable t(4, 1000, [&](fuse_ino_t) { ++ended; });
  auto a = File(), b = File();
  t.Put(7, kGen, a, 10, 0);
  t.End(7, b);  // not 7's pass
  EXPECT_EQ(t.Join(7, kGen, 4096), a);
  t.End(7, a);
  EXPECT_EQ(t.Join(7, kGen, 4096), nullptr);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(ended, 0) << "its pages stay: the kernel holds the object now";
  t.Put(7, kGen, b, 0, 0);
  t.End(7, a);
  EXPECT_EQ(t.Join(7, kGen, 4096), b);
}

TEST(PassTable, AReadAheadWindowThatComesFirstIsJoinedByOffsetZero) {
  PassTable t(4, 1000);
  auto a = File();
  t.Put(7, kGen, a, 0, 131072);     // the read-ahead READ was handled first
  EXPECT_EQ(t.Join(7, kGen, 0), a);  // the file's first READ joins it
  EXPECT_EQ(t.Join(7, kGen, 0), nullptr);
}

TEST(PassTable, KeepsAtMostMaxPassesOldestGoesFirst) {
  PassTable t(3, 1000);
  for (fuse_ino_t ino = 1; ino <= 5; ++ino) t.Put(ino, kGen, File(), 0, 0);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.Join(1, kGen, 1), nullptr);
  EXPECT_EQ(t.Join(2, kGen, 1), nullptr);
  EXPECT_NE(t.Join(3, kGen, 1), nullptr);
  EXPECT_NE(t.Join(5, kGen, 1), nullptr);
}

TEST(PassTable, BytesHeldOutsideTheBudgetAreBounded) {
  PassTable t(100, 1000);
  auto held = File();
  t.Put(1, kGen, held, 600, 0);
  t.Put(2, kGen, File(), 0, 0);  // resident: holds nothing extra
  t.Put(3, kGen, File(), 500, 0);  // 1100 > 1000: the oldest (1) goes
  EXPECT_EQ(t.Join(1, kGen, 1), nullptr);
  EXPECT_NE(t.Join(2, kGen, 1), nullptr);
  EXPECT_NE(t.Join(3, kGen, 1), nullptr);
  EXPECT_EQ(held.use_count(), 1) << "a dropped pass releases what it held";
  t.Put(4, kGen, File(), 1001, 0);  // larger than the bound: never kept
  EXPECT_EQ(t.Join(4, kGen, 1), nullptr);
  EXPECT_EQ(t.size(), 2u);
}

TEST(PassTable, AnObjectsPassEndsWhenTheObjectLeavesTheRamTier) {
  PassTable t(8, 1000);
  auto obj = File();
  auto blocks = File();
  blocks->kind = OpenFile::Kind::kBlocks;
  t.Put(1, kGen, obj, 0, 0);
  t.Put(2, kGen, blocks, 200, 0);
  t.ForgetObject(1);
  t.ForgetObject(2);  // blocks stay (bounded by max_held)
  EXPECT_EQ(t.Join(1, kGen, 1), nullptr);
  EXPECT_EQ(obj.use_count(), 1);
  EXPECT_EQ(t.Join(2, kGen, 1), blocks);
}

TEST(PassTable, APassPushedOutEndsItsHeldObjectsPages) {
  std::vector<fuse_ino_t> ended;
  PassTable t(2, 1000, [&](fuse_ino_t ino) { ended.push_back(ino); });
  t.Put(1, kGen, File(), 300, 0);  // held: not in the RAM tier
  t.Put(2, kGen, File(), 0, 0);    // resident: its pages go with the object
  t.Put(1, kGen, File(), 300, 0);  // replaced by the same inode's next pass: no end
  EXPECT_TRUE(ended.empty());
  t.Put(3, kGen, File(), 0, 0);  // pushes out 2 (resident): nothing to drop
  EXPECT_TRUE(ended.empty());
  t.Put(4, kGen, File(), 0, 0);  // pushes out 1 (held)
  EXPECT_EQ(ended, std::vector<fuse_ino_t>{1});
  EXPECT_FALSE(t.Put(5, kGen, File(), 1001, 0)) << "too large to keep";
}

// An inode number the kernel forgot, given to the next node (another file, or
// the next version of the same one): its READs never join the old node's pass.
TEST(PassTable, AReadJoinsOnlyAPassOfItsNodesGeneration) {
  PassTable t(8, 1000);
  auto old = File();
  t.Put(7, 1, old, 0, 0);
  EXPECT_EQ(t.Join(7, 2, 65536), nullptr) << "the number's next node";
  EXPECT_EQ(t.Join(7, 1, 65536), old);
  auto next = File();
  t.Put(7, 2, next, 0, 65536);  // the next node's pass replaces the old one
  EXPECT_EQ(old.use_count(), 1);
  EXPECT_EQ(t.Join(7, 1, 4096), nullptr);
  EXPECT_EQ(t.Join(7, 2, 0), next);
}

}  // namespace
}  // namespace epochfs::fs
