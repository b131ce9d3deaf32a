// InodeTable: lookups, forgets, number reuse with a new generation, the
// index after renames and detaches, and the compact lower attributes.
#include "inode_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

namespace epochfs::fs {
namespace {

struct stat Lstat(uint64_t size, int64_t mtime_s, uint64_t ino, mode_t mode = S_IFREG | 0644) {
  struct stat st {};
  st.st_size = static_cast<off_t>(size);
  st.st_mtim.tv_sec = mtime_s;
  st.st_mtim.tv_nsec = 7;
  st.st_ino = ino;
  st.st_mode = mode;
  st.st_uid = 1234;
  return st;
}

TEST(InodeTable, LookupsShareANumberUntilForgotten) {
  InodeTable t(Lstat(0, 0, 2, S_IFDIR | 0755));
  NodeView a = t.Ref(NodeKind::kLower, "d/a", Lstat(10, 100, 77));
  EXPECT_NE(a.ino, FUSE_ROOT_ID);
  EXPECT_EQ(a.st.st_uid, 1234u) << "Ref returns the lstat it was given";
  NodeView again = t.Ref(NodeKind::kLower, "d/a", Lstat(10, 100, 77));
  EXPECT_EQ(again.ino, a.ino);
  EXPECT_EQ(t.Peek(NodeKind::kLower, "d/a"), a.ino);
  EXPECT_EQ(t.Peek(NodeKind::kVirtual, "d/a"), 0u) << "kinds are separate";
  auto got = t.Get(a.ino);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->path, "d/a");
  // What an open checks survives; the rest is not kept.
  EXPECT_EQ(got->st.st_size, 10);
  EXPECT_EQ(got->st.st_mtim.tv_sec, 100);
  EXPECT_EQ(got->st.st_mtim.tv_nsec, 7);
  EXPECT_EQ(got->st.st_ino, 77u);
  EXPECT_TRUE(S_ISREG(got->st.st_mode));
  t.Forget(a.ino, 1);
  EXPECT_TRUE(t.Get(a.ino)) << "one lookup left";
  t.Forget(a.ino, 1);
  EXPECT_FALSE(t.Get(a.ino));
  EXPECT_EQ(t.Peek(NodeKind::kLower, "d/a"), 0u);
  t.Forget(FUSE_ROOT_ID, 100);
  EXPECT_TRUE(t.Get(FUSE_ROOT_ID)) << "the root never dies";
}

TEST(InodeTable, AForgottenNumberComesBackWithTheNextGeneration) {
  InodeTable t(Lstat(0, 0, 2, S_IFDIR | 0755));
  NodeView a = t.Ref(NodeKind::kLower, "a", Lstat(1, 1, 10));
  t.Forget(a.ino, 1);
  NodeView b = t.Ref(NodeKind::kLower, "b", Lstat(2, 2, 11));
  EXPECT_EQ(b.ino, a.ino);
  EXPECT_EQ(b.generation, a.generation + 1);
  EXPECT_EQ(t.Get(b.ino)->path, "b");
  EXPECT_EQ(t.Get(b.ino)->st.st_size, 2) << "nothing of the old node is left";
  EXPECT_EQ(t.Peek(NodeKind::kLower, "a"), 0u);
  // Numbers and generations never repeat as a pair.
  std::set<std::pair<uint64_t, uint64_t>> seen;
  for (int i = 0; i < 100; ++i) {
    NodeView v = t.Ref(NodeKind::kLower, "x" + std::to_string(i % 3), Lstat(1, 1, 1));
    EXPECT_TRUE(seen.insert({v.ino, v.generation}).second) << i;
    t.Forget(v.ino, 1);
  }
}

TEST(InodeTable, MarkServedSaysWhetherTheVersionIsTheOneServedLast) {
  InodeTable t(Lstat(0, 0, 2, S_IFDIR | 0755));
  NodeView a = t.Ref(NodeKind::kLower, "a", Lstat(1, 1, 10));
  const store::Version v1{1, 1'000'000'007, 5, 10}, v2{1, 1'000'000'007, 5, 11},
      v3{1, 1'000'000'007, 6, 10};
  EXPECT_FALSE(t.MarkServed(a.ino, v1));
  EXPECT_TRUE(t.MarkServed(a.ino, v1));
  EXPECT_FALSE(t.MarkServed(a.ino, v2)) << "another inode number is another version";
  EXPECT_FALSE(t.MarkServed(a.ino, v3)) << "another ctime is another version";
  EXPECT_FALSE(t.MarkServed(999, v1)) << "no such node";
}

// Consistency "open" (with OPEN or without): a file node is one version for
// good; a changed file gets a new number at its next lookup, the old node
// lives on (detached) for the kernel's lookups on it, and the attributes of
// another version never overwrite a node's. Directories keep their numbers.
TEST(InodeTable, RenumberingGivesAChangedFileANewNode) {
  InodeTable t(Lstat(0, 0, 2, S_IFDIR | 0755), NodeKind::kLower, /*renumber_changed=*/true);
  NodeView a = t.Ref(NodeKind::kLower, "a", Lstat(10, 100, 77));
  EXPECT_EQ(t.Ref(NodeKind::kLower, "a", Lstat(10, 100, 77)).ino, a.ino) << "same version";
  struct stat replaced = Lstat(25, 130, 78);  // GETATTR saw a replaced file
  replaced.st_mode = S_IFREG | 0600;
  t.SetAttr(a.ino, replaced);
  EXPECT_EQ(t.Get(a.ino)->st.st_ino, 77u) << "the node keeps its version";
  // The kernel is answered the node's size and mtime, the rest as LOWER has it.
  EXPECT_EQ(replaced.st_size, 10);
  EXPECT_EQ(replaced.st_mtim.tv_sec, 100);
  EXPECT_EQ(replaced.st_mode, S_IFREG | 0600u);
  struct stat same = Lstat(10, 100, 77);
  same.st_mode = S_IFREG | 0640;
  t.SetAttr(a.ino, same);
  EXPECT_EQ(t.Get(a.ino)->st.st_mode, S_IFREG | 0640u) << "the same version takes a new mode";
  struct stat new_ctime = Lstat(10, 100, 77);
  new_ctime.st_ctim.tv_sec = 5;  // renamed over it with its size and mtime kept
  for (const struct stat& changed :
       {Lstat(10, 100, 78), Lstat(11, 100, 77), Lstat(10, 101, 77), new_ctime}) {
    const fuse_ino_t before = t.Peek(NodeKind::kLower, "a");
    NodeView b = t.Ref(NodeKind::kLower, "a", changed);
    EXPECT_NE(b.ino, before);
    EXPECT_EQ(t.Peek(NodeKind::kLower, "a"), b.ino);
    auto old = t.Get(before);
    ASSERT_TRUE(old) << "the kernel still holds lookups on the old node";
    EXPECT_TRUE(old->detached);
    EXPECT_EQ(old->path, "a");
  }
  t.Forget(a.ino, 2);
  EXPECT_FALSE(t.Get(a.ino));
  EXPECT_NE(t.Peek(NodeKind::kLower, "a"), 0u) << "forgetting a detached node leaves the new one";
  NodeView d = t.Ref(NodeKind::kLower, "d", Lstat(0, 5, 9, S_IFDIR | 0755));
  EXPECT_EQ(t.Ref(NodeKind::kLower, "d", Lstat(0, 6, 9, S_IFDIR | 0755)).ino, d.ino);
  // Without renumbering a node takes the new attributes under its number.
  InodeTable plain(Lstat(0, 0, 2, S_IFDIR | 0755));
  NodeView p = plain.Ref(NodeKind::kLower, "a", Lstat(10, 100, 77));
  EXPECT_EQ(plain.Ref(NodeKind::kLower, "a", Lstat(12, 100, 78)).ino, p.ino);
  EXPECT_EQ(plain.Get(p.ino)->st.st_size, 12);
}

// A LOWER without stable inode numbers (a FUSE LOWER that numbers a node
// anew after the kernel forgot it): an unchanged file under a new number
// keeps its node, and GETATTR shows it as it is; a changed one is renumbered.
TEST(InodeTable, AFileLowerOnlyNumberedAnewKeepsItsNode) {
  InodeTable t(Lstat(0, 0, 2, S_IFDIR | 0755), NodeKind::kLower, /*renumber_changed=*/true,
               store::VersionRule(/*stable_inodes=*/false));
  NodeView a = t.Ref(NodeKind::kLower, "a", Lstat(10, 100, 77));
  EXPECT_EQ(t.Ref(NodeKind::kLower, "a", Lstat(10, 100, 78)).ino, a.ino);
  struct stat renumbered = Lstat(10, 100, 79);
  renumbered.st_mode = S_IFREG | 0600;
  t.SetAttr(a.ino, renumbered);
  EXPECT_EQ(t.Get(a.ino)->st.st_mode, S_IFREG | 0600u) << "the same version's attributes";
  struct stat replaced = Lstat(10, 100, 79);
  replaced.st_ctim.tv_sec = 3;
  NodeView b = t.Ref(NodeKind::kLower, "a", replaced);
  EXPECT_NE(b.ino, a.ino);
  EXPECT_EQ(t.Get(b.ino)->st.st_ctim.tv_sec, 3) << "an open checks the ctime too";
}

// Under "open" a lookup's stat is the check of the open it starts: each
// check is taken by one open only, and never by an open of a node that no
// longer names its path.
TEST(InodeTable, ALookupsCheckIsTakenByOneOpen) {
  InodeTable t(Lstat(0, 0, 2, S_IFDIR | 0755), NodeKind::kLower, /*renumber_changed=*/true);
  NodeView a = t.Ref(NodeKind::kLower, "a", Lstat(10, 100, 77));
  EXPECT_FALSE(t.TakeChecked(a.ino)) << "no lookup checked it";
  t.MarkChecked(a.ino);
  EXPECT_TRUE(t.TakeChecked(a.ino));
  EXPECT_FALSE(t.TakeChecked(a.ino)) << "a second open stats LOWER itself";
  t.MarkChecked(a.ino);
  t.MarkChecked(a.ino);  // two lookups before one open: still one check
  EXPECT_TRUE(t.TakeChecked(a.ino));
  EXPECT_FALSE(t.TakeChecked(a.ino));
  t.MarkChecked(a.ino);
  NodeView b = t.Ref(NodeKind::kLower, "a", Lstat(11, 101, 77));  // changed: renumbered
  ASSERT_NE(b.ino, a.ino);
  EXPECT_FALSE(t.TakeChecked(a.ino)) << "the old version's node is detached";
  t.MarkChecked(a.ino);
  EXPECT_FALSE(t.TakeChecked(a.ino));
  EXPECT_FALSE(t.TakeChecked(b.ino));
  t.MarkChecked(b.ino);
  t.Forget(b.ino, 1);
  NodeView c = t.Ref(NodeKind::kLower, "c", Lstat(3, 1, 80));
  EXPECT_EQ(c.ino, b.ino) << "the forgotten number is reused";
  EXPECT_FALSE(t.TakeChecked(c.ino)) << "a reused number keeps no check of its old node";
  EXPECT_FALSE(t.TakeChecked(999));
}

TEST(InodeTable, RenameMovesASubtreeAndDetachesWhatItReplaces) {
  InodeTable t(Lstat(0, 0, 2, S_IFDIR | 0755));
  NodeView dir = t.Ref(NodeKind::kSpill, "u/d", {});
  NodeView f = t.Ref(NodeKind::kSpill, "u/d/f", {});
  NodeView g = t.Ref(NodeKind::kSpill, "u/d/sub/g", {});
  NodeView other = t.Ref(NodeKind::kSpill, "u/dd", {});  // a prefix, not below
  NodeView target = t.Ref(NodeKind::kSpill, "u/e", {});
  t.Rename(NodeKind::kSpill, "u/d", "u/e");
  EXPECT_EQ(t.Peek(NodeKind::kSpill, "u/e"), dir.ino);
  EXPECT_EQ(t.Peek(NodeKind::kSpill, "u/e/f"), f.ino);
  EXPECT_EQ(t.Peek(NodeKind::kSpill, "u/e/sub/g"), g.ino);
  EXPECT_EQ(t.Peek(NodeKind::kSpill, "u/d/f"), 0u);
  EXPECT_EQ(t.Peek(NodeKind::kSpill, "u/dd"), other.ino);
  EXPECT_EQ(t.Get(g.ino)->path, "u/e/sub/g");
  auto replaced = t.Get(target.ino);
  ASSERT_TRUE(replaced) << "an open handle may still use it";
  EXPECT_TRUE(replaced->detached);
  // A new node at the detached one's old path is another node.
  NodeView fresh = t.Ref(NodeKind::kSpill, "u/d", {});
  EXPECT_NE(fresh.ino, dir.ino);
  // Forgetting the detached node does not unhook the live one at its path.
  t.Forget(target.ino, 1);
  EXPECT_EQ(t.Peek(NodeKind::kSpill, "u/e"), dir.ino);
}

TEST(InodeTable, DetachTreeUnhooksAPathAndEverythingBelow) {
  InodeTable t(Lstat(0, 0, 2, S_IFDIR | 0755));
  NodeView j = t.Ref(NodeKind::kVirtual, "jobs/a", {});
  NodeView s = t.Ref(NodeKind::kVirtual, "jobs/a/status", {});
  NodeView b = t.Ref(NodeKind::kVirtual, "jobs/ab", {});
  NodeView l = t.Ref(NodeKind::kLower, "jobs/a", Lstat(1, 1, 1));  // another kind
  t.DetachTree(NodeKind::kVirtual, "jobs/a");
  EXPECT_EQ(t.Peek(NodeKind::kVirtual, "jobs/a"), 0u);
  EXPECT_EQ(t.Peek(NodeKind::kVirtual, "jobs/a/status"), 0u);
  EXPECT_TRUE(t.Get(s.ino)->detached);
  EXPECT_EQ(t.Peek(NodeKind::kVirtual, "jobs/ab"), b.ino);
  EXPECT_EQ(t.Peek(NodeKind::kLower, "jobs/a"), l.ino);
  NodeView again = t.Ref(NodeKind::kVirtual, "jobs/a", {});
  EXPECT_NE(again.ino, j.ino) << "a new job directory gets a new number";
}

// Many threads looking up, forgetting and renaming at once: every node keeps
// its number while looked up, and the index agrees with the nodes at the end.
TEST(InodeTable, ConcurrentLookupsAndForgets) {
  InodeTable t(Lstat(0, 0, 2, S_IFDIR | 0755));
  constexpr int kThreads = 4, kRounds = 2000;
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&t, w] {
      for (int i = 0; i < kRounds; ++i) {
        const std::string p = "d" + std::to_string(i % 50) + "/f" + std::to_string(w);
        NodeView v = t.Ref(NodeKind::kLower, p, Lstat(i, i, i));
        auto got = t.Get(v.ino);
        ASSERT_TRUE(got);
        ASSERT_EQ(got->path, p);
        ASSERT_EQ(t.Peek(NodeKind::kLower, p), v.ino);
        if (i % 3 != 0) t.Forget(v.ino, 1);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int w = 0; w < kThreads; ++w) {
    for (int k = 0; k < 50; ++k) {
      const std::string p = "d" + std::to_string(k) + "/f" + std::to_string(w);
      const fuse_ino_t ino = t.Peek(NodeKind::kLower, p);
      ASSERT_NE(ino, 0u) << p;
      EXPECT_EQ(t.Get(ino)->path, p);
    }
  }
}

TEST(InodeTable, AControlSessionsRootIsTheVirtualRoot) {
  InodeTable t(Lstat(0, 0, 2, S_IFDIR | 0755), NodeKind::kVirtual);
  auto root = t.Get(FUSE_ROOT_ID);
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->kind, NodeKind::kVirtual);
  EXPECT_EQ(root->path, "");
  EXPECT_EQ(t.Peek(NodeKind::kVirtual, ""), FUSE_ROOT_ID);
  EXPECT_EQ(t.Peek(NodeKind::kLower, ""), 0u);
  NodeView jobs = t.Ref(NodeKind::kVirtual, "jobs", {});
  EXPECT_NE(jobs.ino, FUSE_ROOT_ID);
  EXPECT_EQ(t.Ref(NodeKind::kVirtual, "", {}).ino, FUSE_ROOT_ID);
  t.DetachTree(NodeKind::kVirtual, "jobs");
  EXPECT_EQ(t.Peek(NodeKind::kVirtual, ""), FUSE_ROOT_ID) << "the root is never detached";
}

}  // namespace
}  // namespace epochfs::fs
