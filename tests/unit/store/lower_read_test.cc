// Lower's whole-file reads (ReadWhole, OpenAndRead): exactly the bytes of a
// file that is as its stat said, and IoError for one that grew or shrank
// since, with and without the gate, for an empty file, a small one and one
// of several read pieces. The end of the file is checked by the last read
// itself (one byte asked past it), not by a read of its own: that it costs
// no call is counted against a store in tests/integration/test_slow_store.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "epochfs/store/lower.h"

namespace epochfs::store {
namespace lower_read_test {

namespace stdfs = std::filesystem;

class Dir {
 public:
  Dir() {
    char tmpl[] = "/tmp/epochfs-lower-read-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~Dir() { stdfs::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::vector<char> Write(const std::string& rel, size_t size) {
    std::vector<char> data(size);
    for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>((i * 131 + size) & 0xff);
    std::ofstream(path_ + "/" + rel, std::ios::binary).write(data.data(), data.size());
    return data;
  }

 private:
  std::string path_;
};

std::unique_ptr<Lower> OpenLower(const std::string& root, bool gated) {
  auto l = Lower::Open(root, LowerGateOptions{std::chrono::milliseconds(gated ? 30'000 : 0)});
  EXPECT_TRUE(l.ok());
  if (gated) l.value()->StartGate();
  return std::move(l).value();
}

class LowerRead : public ::testing::TestWithParam<bool> {};

TEST_P(LowerRead, AFileAsItsStatSaidIsReadWholeAndOneThatChangedIsRefused) {
  Dir d;
  auto lower = OpenLower(d.path(), GetParam());
  const size_t piece = 8u << 20;  // Lower's read piece
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{100'000}, piece, piece + 3}) {
    SCOPED_TRACE(size);
    const std::vector<char> want = d.Write("f", size);
    auto fd = lower->OpenFile("f");
    ASSERT_TRUE(fd.ok());
    auto got = lower->ReadWhole(fd.value().get(), size);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_TRUE(got.value() == want);
    // The stat said one byte less: the file grew since.
    if (size > 0) {
      auto grew = lower->ReadWhole(fd.value().get(), size - 1);
      ASSERT_FALSE(grew.ok());
      EXPECT_EQ(grew.status().code(), Code::kIoError);
      EXPECT_NE(grew.status().message().find("grew"), std::string::npos);
    }
    // The stat said one byte more: the file shrank since.
    auto shrank = lower->ReadWhole(fd.value().get(), size + 1);
    ASSERT_FALSE(shrank.ok());
    EXPECT_EQ(shrank.status().code(), Code::kIoError);
    EXPECT_NE(shrank.status().message().find("shrank"), std::string::npos);

    // Opened, stat'ed and read in one operation: up to one piece.
    auto opened = lower->OpenAndRead("f", UINT64_MAX);
    ASSERT_TRUE(opened.ok());
    EXPECT_EQ(static_cast<size_t>(opened.value().st.st_size), size);
    if (size <= piece) {
      ASSERT_TRUE(opened.value().data.has_value());
      ASSERT_TRUE(opened.value().data->ok());
      EXPECT_TRUE(opened.value().data->value() == want);
    } else {
      EXPECT_FALSE(opened.value().data.has_value()) << "more than a piece: read by the caller";
    }
  }
}

TEST_P(LowerRead, ASmallFileThatGrewBetweenItsStatAndItsReadIsRefused) {
  Dir d;
  auto lower = OpenLower(d.path(), GetParam());
  d.Write("f", 1000);
  auto fd = lower->OpenFile("f");
  ASSERT_TRUE(fd.ok());
  d.Write("f", 1500);  // in place: the open file grows
  auto got = lower->ReadWhole(fd.value().get(), 1000);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("grew"), std::string::npos);
  d.Write("f", 10);  // and shrinks
  got = lower->ReadWhole(fd.value().get(), 1000);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("shrank"), std::string::npos);
}

TEST_P(LowerRead, OneReadIsCountedPerPiece) {
  Dir d;
  auto lower = OpenLower(d.path(), GetParam());
  const size_t piece = 8u << 20;
  d.Write("small", 5000);
  d.Write("big", 2 * piece + 1);
  const auto reads = [&] { return lower->health().counts().of(LowerCall::kRead); };
  uint64_t before = reads();
  ASSERT_TRUE(lower->OpenAndRead("small", UINT64_MAX).ok());
  EXPECT_EQ(reads() - before, 1u);
  auto fd = lower->OpenFile("big");
  ASSERT_TRUE(fd.ok());
  before = reads();
  ASSERT_TRUE(lower->ReadWhole(fd.value().get(), 2 * piece + 1).ok());
  EXPECT_EQ(reads() - before, 3u) << "three pieces, and no read of its own for the end";
}

TEST_P(LowerRead, HeldAttributesReadTheSameBytesWithoutAStatCall) {
  Dir d;
  auto lower = OpenLower(d.path(), GetParam());
  const std::vector<char> want = d.Write("f", 100'000);
  const auto stats = [&] { return lower->health().counts().of(LowerCall::kStat); };
  uint64_t before = stats();
  auto fresh = lower->OpenAndRead("f", UINT64_MAX, nullptr, Lower::Attrs::kFresh);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(stats() - before, 1u);
  EXPECT_TRUE(fresh.value().stat_asked);
  before = stats();
  auto held = lower->OpenAndRead("f", UINT64_MAX, nullptr, Lower::Attrs::kHeld);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(stats() - before, 0u) << "the attributes the kernel holds: no call";
  EXPECT_FALSE(held.value().stat_asked);
  const struct stat& a = fresh.value().st;
  const struct stat& b = held.value().st;
  EXPECT_EQ(lower->versions().Of(a), lower->versions().Of(b));
  EXPECT_EQ(std::make_tuple(a.st_mode, a.st_uid, a.st_gid, a.st_nlink, a.st_dev),
            std::make_tuple(b.st_mode, b.st_uid, b.st_gid, b.st_nlink, b.st_dev));
  ASSERT_TRUE(held.value().data.has_value());
  ASSERT_TRUE(held.value().data->ok());
  EXPECT_TRUE(held.value().data->value() == want);
}

INSTANTIATE_TEST_SUITE_P(GatedOrNot, LowerRead, ::testing::Bool());

}  // namespace lower_read_test
}  // namespace epochfs::store
