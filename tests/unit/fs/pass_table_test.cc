// PassTable (src/fs/pass_table.h): a READ joins the inode's pass; the table
// keeps at most max_passes passes and max_held bytes held outside the RAM tier,
// dropping the oldest first.
#include "pass_table.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace epochfs::fs {
namespace {

std::shared_ptr<OpenFile> File() {
  auto f = std::make_shared<OpenFile>();
  f->kind = OpenFile::Kind::kObject;
  return f;
}

TEST(PassTable, ReadsJoinTheirInodesPassUntilOffsetZeroComesAgain) {
  PassTable t(4, 1000);
  EXPECT_EQ(t.Join(7, 0), nullptr);
  auto a = File();
  t.Put(7, a, 0, 0);
  EXPECT_EQ(t.Join(7, 4096), a);
  EXPECT_EQ(t.Join(8, 4096), nullptr);
  EXPECT_EQ(t.Join(7, 0), nullptr) << "offset 0 served: the file is read again";
  auto b = File();
  t.Put(7, b, 0, 0);
  EXPECT_EQ(t.Join(7, 8192), b);
  EXPECT_EQ(t.size(), 1u);
}

// An object handed over to the kernel ends its pass, and only its own: a
// newer pass of the inode stays.
TEST(PassTable, EndEndsOnlyThePassOfThatFile) {
  int ended = 0;
  PassTable t(4, 1000, [&](fuse_ino_t) { ++ended; });
  auto a = File(), b = File();
  t.Put(7, a, 10, 0);
  t.End(7, b);  // not 7's pass
  EXPECT_EQ(t.Join(7, 4096), a);
  t.End(7, a);
  EXPECT_EQ(t.Join(7, 4096), nullptr);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(ended, 0) << "its pages stay: the kernel holds the object now";
  t.Put(7, b, 0, 0);
  t.End(7, a);
  EXPECT_EQ(t.Join(7, 4096), b);
}

TEST(PassTable, AReadAheadWindowThatComesFirstIsJoinedByOffsetZero) {
  PassTable t(4, 1000);
  auto a = File();
  t.Put(7, a, 0, 131072);     // the read-ahead READ was handled first
  EXPECT_EQ(t.Join(7, 0), a);  // the file's first READ joins it
  EXPECT_EQ(t.Join(7, 0), nullptr);
}

TEST(PassTable, KeepsAtMostMaxPassesOldestGoesFirst) {
  PassTable t(3, 1000);
  for (fuse_ino_t ino = 1; ino <= 5; ++ino) t.Put(ino, File(), 0, 0);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.Join(1, 1), nullptr);
  EXPECT_EQ(t.Join(2, 1), nullptr);
  EXPECT_NE(t.Join(3, 1), nullptr);
  EXPECT_NE(t.Join(5, 1), nullptr);
}

TEST(PassTable, BytesHeldOutsideTheBudgetAreBounded) {
  PassTable t(100, 1000);
  auto held = File();
  t.Put(1, held, 600, 0);
  t.Put(2, File(), 0, 0);  // resident: holds nothing extra
  t.Put(3, File(), 500, 0);  // 1100 > 1000: the oldest (1) goes
  EXPECT_EQ(t.Join(1, 1), nullptr);
  EXPECT_NE(t.Join(2, 1), nullptr);
  EXPECT_NE(t.Join(3, 1), nullptr);
  EXPECT_EQ(held.use_count(), 1) << "a dropped pass releases what it held";
  t.Put(4, File(), 1001, 0);  // larger than the bound: never kept
  EXPECT_EQ(t.Join(4, 1), nullptr);
  EXPECT_EQ(t.size(), 2u);
}

TEST(PassTable, AnObjectsPassEndsWhenTheObjectLeavesTheRamTier) {
  PassTable t(8, 1000);
  auto obj = File();
  auto blocks = File();
  blocks->kind = OpenFile::Kind::kBlocks;
  t.Put(1, obj, 0, 0);
  t.Put(2, blocks, 200, 0);
  t.ForgetObject(1);
  t.ForgetObject(2);  // blocks stay (bounded by max_held)
  EXPECT_EQ(t.Join(1, 1), nullptr);
  EXPECT_EQ(obj.use_count(), 1);
  EXPECT_EQ(t.Join(2, 1), blocks);
}

TEST(PassTable, APassPushedOutEndsItsHeldObjectsPages) {
  std::vector<fuse_ino_t> ended;
  PassTable t(2, 1000, [&](fuse_ino_t ino) { ended.push_back(ino); });
  t.Put(1, File(), 300, 0);  // held: not in the RAM tier
  t.Put(2, File(), 0, 0);    // resident: its pages go with the object
  t.Put(1, File(), 300, 0);  // replaced by the same inode's next pass: no end
  EXPECT_TRUE(ended.empty());
  t.Put(3, File(), 0, 0);  // pushes out 2 (resident): nothing to drop
  EXPECT_TRUE(ended.empty());
  t.Put(4, File(), 0, 0);  // pushes out 1 (held)
  EXPECT_EQ(ended, std::vector<fuse_ino_t>{1});
  EXPECT_FALSE(t.Put(5, File(), 1001, 0)) << "too large to keep";
}

}  // namespace
}  // namespace epochfs::fs
