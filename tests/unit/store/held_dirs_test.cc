// HeldDirs and Lower with held directories: files open relative to their
// directory's held descriptor with the same bytes and errors as from the
// root, a directory opens beneath its held parent, its attributes are kept
// from its open, the bound holds, nothing escapes the root, and a name a
// held directory does not have falls back to the root walk.
#include "epochfs/store/held_dirs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "epochfs/store/lower.h"

namespace epochfs::store::held_dirs_test {

class HeldDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/epochfs-held-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    std::filesystem::create_directories(root_ + "/d/e");
    std::filesystem::create_directories(root_ + "/x");
    std::ofstream(root_ + "/d/e/a") << "aaaa";
    std::ofstream(root_ + "/d/e/b") << "bbbbbbbb";
    std::ofstream(root_ + "/top") << "t";
    std::filesystem::create_directory_symlink("/etc", root_ + "/link");
    lower_ = std::move(Lower::Open(root_, LowerGateOptions{std::chrono::milliseconds(0)}, 4))
                 .value();
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::string Read(const std::string& rel) const {
    auto f = lower_->OpenAndRead(rel, 1 << 20);
    if (!f.ok()) return "error: " + f.status().message();
    EXPECT_TRUE(f.value().data.has_value());
    if (!f.value().data->ok()) return "read error";
    const auto& bytes = f.value().data->value();
    return std::string(bytes.begin(), bytes.end());
  }

  std::string root_;
  std::unique_ptr<Lower> lower_;
};

TEST(SplitRelTest, DirectoryAndName) {
  EXPECT_EQ(SplitRel("a/b/c").dir, "a/b");
  EXPECT_EQ(SplitRel("a/b/c").name, "c");
  EXPECT_EQ(SplitRel("c").dir, "");
  EXPECT_EQ(SplitRel("c").name, "c");
}

TEST_F(HeldDirsTest, FilesOfOneDirectoryOpenThroughOneHeldDescriptor) {
  EXPECT_EQ(Read("d/e/a"), "aaaa");
  EXPECT_EQ(Read("d/e/b"), "bbbbbbbb");
  EXPECT_EQ(lower_->held_dirs_opened(), 2u);  // d/e, beneath d
  EXPECT_EQ(Read("top"), "t");  // at the top: the root itself, nothing held
  EXPECT_EQ(lower_->held_dirs_opened(), 2u);
  auto st = lower_->Stat("d/e/b");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st.value().st_size, 8);
  EXPECT_EQ(lower_->held_dirs_opened(), 2u);
  auto fd = lower_->OpenFile("d/e/a");
  ASSERT_TRUE(fd.ok());
  char c = 0;
  EXPECT_EQ(::pread(fd.value().get(), &c, 1, 0), 1);
  EXPECT_EQ(c, 'a');
  EXPECT_EQ(lower_->held_dirs_opened(), 2u);
}

TEST_F(HeldDirsTest, AHeldDirectorysAttributesAreThoseOfItsOpen) {
  EXPECT_FALSE(lower_->HeldDirAttrs("d/e").has_value());  // not held yet
  const auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(Read("d/e/a"), "aaaa");
  for (const char* dir : {"d", "d/e"}) {
    struct stat want;
    ASSERT_EQ(::stat((root_ + "/" + dir).c_str(), &want), 0);
    auto got = lower_->HeldDirAttrs(dir);
    ASSERT_TRUE(got.has_value()) << dir;
    EXPECT_EQ(got->st.st_ino, want.st_ino) << dir;
    EXPECT_EQ(got->st.st_mode, want.st_mode) << dir;
    EXPECT_EQ(got->st.st_uid, want.st_uid) << dir;
    EXPECT_EQ(got->st.st_nlink, want.st_nlink) << dir;
    EXPECT_EQ(got->st.st_mtim.tv_nsec, want.st_mtim.tv_nsec) << dir;
    EXPECT_GE(got->at, before) << dir;
  }
  EXPECT_FALSE(lower_->HeldDirAttrs("x").has_value());
  EXPECT_FALSE(lower_->HeldDirAttrs("top").has_value());
}

TEST_F(HeldDirsTest, ADirectoryOpensBeneathItsHeldParentAndDropsWithIt) {
  HeldDirs held(8);
  const int root = ::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(root, 0);
  ASSERT_NE(held.Get(root, "d/e"), nullptr);
  EXPECT_EQ(held.opened(), 2u);  // d first, then e beneath it
  EXPECT_EQ(held.held(), 2u);
  // Through the held parent: d renamed away and a new d put in its place
  // is not seen by a directory opened beneath the old one (as the root
  // walk's answer when d was opened)...
  std::filesystem::rename(root_ + "/d", root_ + "/x/old");
  std::filesystem::create_directories(root_ + "/d/f");
  EXPECT_EQ(held.Get(root, "d/f"), nullptr);
  // ...until a failed lookup drops d/e and its ancestors: then d opens afresh.
  held.Drop("d/e");
  EXPECT_EQ(held.held(), 0u);
  EXPECT_NE(held.Get(root, "d/f"), nullptr);
  EXPECT_EQ(held.held(), 2u);
  // A directory that deep or deeper opens beneath the root: its parents are not held.
  std::string deep = "x";
  for (long i = 1; i < kParentDepth + 1; ++i) deep += "/n";
  std::filesystem::create_directories(root_ + "/" + deep);
  ASSERT_NE(held.Get(root, deep), nullptr);
  EXPECT_EQ(held.held(), 3u);
  ::close(root);
}

TEST_F(HeldDirsTest, NothingEscapesTheRoot) {
  EXPECT_EQ(lower_->OpenFile("link/passwd").status().code(), Code::kNotFound);
  EXPECT_EQ(lower_->OpenFile("d/../../etc/passwd").status().code(), Code::kNotFound);
  EXPECT_EQ(lower_->OpenFile("d/e/../../../etc/passwd").status().code(), Code::kNotFound);
  EXPECT_EQ(lower_->Stat("link/passwd").status().code(), Code::kNotFound);
  EXPECT_EQ(lower_->OpenFile("d/e/missing").status().code(), Code::kNotFound);
  EXPECT_EQ(lower_->OpenFile("d/e/missing").status().message(), "d/e/missing: No such file or directory");
}

TEST_F(HeldDirsTest, ANameTheHeldDirectoryLacksIsFoundFromTheRoot) {
  EXPECT_EQ(Read("d/e/a"), "aaaa");
  // d/e replaced on LOWER: the held descriptor is the old directory, which
  // has no "c"; the root walk finds the new one's, and the old is let go.
  std::filesystem::rename(root_ + "/d/e", root_ + "/x/old");
  std::filesystem::create_directory(root_ + "/d/e");
  std::ofstream(root_ + "/d/e/c") << "cc";
  EXPECT_EQ(Read("d/e/c"), "cc");
  EXPECT_EQ(lower_->held_dirs_opened(), 2u);
  std::ofstream(root_ + "/d/e/a") << "new";
  EXPECT_EQ(Read("d/e/a"), "new");  // the new directory, held now
  EXPECT_EQ(lower_->held_dirs_opened(), 4u);  // d and d/e again
}

TEST_F(HeldDirsTest, TheBoundHolds) {
  HeldDirs held(2);
  const int root = ::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(root, 0);
  auto d = held.Get(root, "d");
  auto e = held.Get(root, "d/e");
  ASSERT_NE(d, nullptr);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(held.Get(root, "d"), d);  // held: the same descriptor
  EXPECT_EQ(held.held(), 2u);
  ASSERT_NE(held.Get(root, "x"), nullptr);  // d, the oldest, makes room
  EXPECT_EQ(held.held(), 2u);
  EXPECT_EQ(held.opened(), 3u);
  EXPECT_NE(held.Get(root, "d/e"), nullptr);
  EXPECT_EQ(held.opened(), 3u);
  EXPECT_GE(d->get(), 0);  // a user still holding it keeps it open
  EXPECT_EQ(held.Get(root, "link"), nullptr);  // a symlink is never held
  EXPECT_EQ(held.Get(root, "top"), nullptr);   // nor a file
  EXPECT_EQ(held.Get(root, "../"), nullptr);
  held.Drop("x");
  EXPECT_EQ(held.held(), 1u);
  ::close(root);
}

}  // namespace epochfs::store::held_dirs_test
