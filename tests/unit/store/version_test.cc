// VersionRule: what makes two attributes of a lower file one version, with
// LOWER's inode numbers and without them (version.h).
#include "epochfs/store/version.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace epochfs::store::version_test {

struct stat Attrs(uint64_t size, int64_t mtime_s, int64_t ctime_s, uint64_t ino) {
  struct stat st {};
  st.st_size = static_cast<off_t>(size);
  st.st_mtim = {mtime_s, 5};
  st.st_ctim = {ctime_s, 9};
  st.st_ino = ino;
  st.st_mode = S_IFREG | 0644;
  return st;
}

TEST(VersionRule, ReadsSizeTimesAndTheInodeNumberWhereItIsStable) {
  const Version v = VersionRule(true).Of(Attrs(10, 100, 200, 77));
  EXPECT_EQ(v, (Version{10, 100'000'000'005, 200'000'000'009, 77}));
  const Version u = VersionRule(false).Of(Attrs(10, 100, 200, 77));
  EXPECT_EQ(u, (Version{10, 100'000'000'005, 200'000'000'009, 0}));
}

// An unchanged file LOWER numbered anew (a FUSE LOWER without use_ino): one
// version there, two where inode numbers are stable.
TEST(VersionRule, AFileNumberedAnewIsTheSameVersionOnlyWithoutStableInodes) {
  const struct stat before = Attrs(10, 100, 200, 77), after = Attrs(10, 100, 200, 78);
  EXPECT_EQ(VersionRule(false).Of(before), VersionRule(false).Of(after));
  EXPECT_NE(VersionRule(true).Of(before), VersionRule(true).Of(after));
}

// A copy renamed over the file with its size and mtime kept (`cp -p`):
// LOWER gives it the rename's ctime, and under the same inode number when
// the LOWER numbers by name (a FUSE LOWER without use_ino).
TEST(VersionRule, ACopyOfTheSameSizeAndMtimeIsAnotherVersionByItsCtime) {
  const struct stat before = Attrs(10, 100, 200, 77), copy = Attrs(10, 100, 250, 77);
  for (bool stable : {true, false}) {
    EXPECT_NE(VersionRule(stable).Of(before), VersionRule(stable).Of(copy)) << stable;
  }
  struct stat bigger = before;
  bigger.st_size = 11;
  struct stat touched = before;
  touched.st_mtim.tv_nsec = 6;
  for (const struct stat& other : {bigger, touched}) {
    EXPECT_NE(VersionRule(false).Of(before), VersionRule(false).Of(other));
  }
}

TEST(VersionRule, InodeNumbersAreStableOnALocalFileSystem) {
  char dir[] = "/tmp/epochfs-version-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(VersionRule::ForFileSystemOf(fd).stable_inodes());
  ::close(fd);
  ::rmdir(dir);
  EXPECT_TRUE(VersionRule::ForFileSystemOf(-1).stable_inodes()) << "unknown: stable";
}

}  // namespace epochfs::store::version_test
