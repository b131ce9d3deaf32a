#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

#include "epochfs/common/bytes_text.h"
#include "epochfs/common/fresh_bytes.h"
#include "epochfs/common/hash.h"
#include "epochfs/common/log.h"
#include "epochfs/common/log_limit.h"
#include "epochfs/common/status.h"
#include "epochfs/common/unique_fd.h"

namespace epochfs {
namespace {

TEST(Status, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = InvalidArgument("bad index 7");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "InvalidArgument: bad index 7");
}

TEST(Result, HoldsValueOrStatus) {
  Result<int> v(5);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v.value(), 5);
  EXPECT_TRUE(v.status().ok());
  Result<int> e(NotFound("x"));
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kNotFound);
}

TEST(Checksum, IsXxh3AndSensitive) {
  const char a[] = "epochfs";
  EXPECT_EQ(Checksum(a, 7), Checksum(a, 7));
  EXPECT_NE(Checksum(a, 7), Checksum(a, 6));
  EXPECT_EQ(Checksum("", 0), 0x2D06800538D394C2ull);  // XXH3-64 of the empty input
}

TEST(SizeForRead, SizesAndZeroes) {
  for (size_t n : {size_t{0}, size_t{100}, size_t{64 * 1024}, size_t{(4 << 20) + 3}}) {
    std::vector<char> v;
    SizeForRead(&v, n);
    ASSERT_EQ(v.size(), n);
    EXPECT_EQ(std::count(v.begin(), v.end(), 0), static_cast<std::ptrdiff_t>(n)) << n;
    if (n > 0) v[n - 1] = 'x';  // writable to its last byte
  }
}

TEST(CopyFresh, HoldsTheSourcesBytes) {
  for (size_t n : {size_t{0}, size_t{100}, size_t{64 * 1024}, size_t{(4 << 20) + 3}}) {
    std::vector<char> src(n);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<char>(1 + i * 7 + i / 4096);
    std::vector<char> v;
    CopyFresh(&v, src.data(), n);
    ASSERT_EQ(v.size(), n);
    EXPECT_TRUE(v == src) << n;
  }
}

TEST(Checksum, BlockSumsAreEachBlocksLittleEndian) {
  std::vector<char> d(2 * 1000 + 5);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<char>(i * 11);
  const std::vector<uint8_t> s = BlockSums(d.data(), d.size(), 1000);
  ASSERT_EQ(s.size(), 3u * 8);
  for (size_t b = 0; b < 3; ++b) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | s[8 * b + i];
    EXPECT_EQ(v, Checksum(d.data() + 1000 * b, std::min<size_t>(1000, d.size() - 1000 * b))) << b;
  }
  EXPECT_TRUE(BlockSums(d.data(), 0, 1000).empty());
}

TEST(Checksum, StreamOverPiecesEqualsOneShot) {
  std::vector<char> d(300 * 1024 + 7);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<char>(i * 131 + i / 977);
  ChecksumStream s;
  EXPECT_EQ(s.Digest(), Checksum("", 0));
  // Pieces of every size class XXH3 treats apart: tiny, mid, over a stripe
  // block, and one that is most of the input.
  const size_t cuts[] = {0, 1, 17, 240, 241, 1024, 4096 + 3, 65536, 200000, d.size()};
  for (size_t i = 0; i + 1 < std::size(cuts); ++i) {
    s.Update(d.data() + cuts[i], cuts[i + 1] - cuts[i]);
    EXPECT_EQ(s.Digest(), Checksum(d.data(), cuts[i + 1])) << cuts[i + 1];
  }
  s.Reset();
  s.Update(d.data(), 5);
  EXPECT_EQ(s.Digest(), Checksum(d.data(), 5));
  ChecksumStream moved = std::move(s);
  moved.Update(d.data() + 5, 100);
  EXPECT_EQ(moved.Digest(), Checksum(d.data(), 105));
}

TEST(UniqueFd, ClosesOnce) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    UniqueFd a(fds[0]);
    UniqueFd b(std::move(a));
    EXPECT_FALSE(a.valid());
    EXPECT_TRUE(b.valid());
  }
  EXPECT_EQ(::close(fds[0]), -1);  // already closed by b
  ::close(fds[1]);
}

TEST(HumanBytes, ExactBelowAKibThenBinaryUnits) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1024), "1.0 KiB");
  EXPECT_EQ(HumanBytes(1536, 2), "1.50 KiB");
  EXPECT_EQ(HumanBytes(uint64_t{3} << 30), "3.0 GiB");
  EXPECT_EQ(HumanBytes(UINT64_MAX), "16.0 EiB");
}

TEST(LogLimit, AtMostNPerWindowThenSaysHowManyWereLeftOut) {
  uint64_t now = 1000;
  log::LogLimit limit(2, 10, [&] { return now; });
  EXPECT_EQ(limit.Admit("a"), "a");
  EXPECT_EQ(limit.Admit("b"), "b");
  EXPECT_EQ(limit.Admit("c"), "");
  EXPECT_EQ(limit.Admit("d"), "");
  now += 9;
  EXPECT_EQ(limit.Admit("e"), "") << "still the same window";
  now += 1;
  EXPECT_EQ(limit.Admit("f"), "(3 similar lines left out) f");
  EXPECT_EQ(limit.Admit("g"), "g");
  EXPECT_EQ(limit.Admit("h"), "");
  now += 100;
  EXPECT_EQ(limit.Admit("i"), "(1 similar lines left out) i");
}

TEST(LogLevel, NamesAsSpdlogReadsThem) {
  log::Level l = log::Level::kOff;
  EXPECT_TRUE(log::ParseLevel("debug", &l));
  EXPECT_EQ(l, log::Level::kDebug);
  EXPECT_TRUE(log::ParseLevel("warn", &l));
  EXPECT_EQ(l, log::Level::kWarn);
  EXPECT_TRUE(log::ParseLevel("warning", &l));
  EXPECT_EQ(l, log::Level::kWarn);
  EXPECT_TRUE(log::ParseLevel("error", &l));
  EXPECT_EQ(l, log::Level::kError);
  EXPECT_TRUE(log::ParseLevel("off", &l));
  EXPECT_EQ(l, log::Level::kOff);
  EXPECT_FALSE(log::ParseLevel("loud", &l));
  EXPECT_FALSE(log::ParseLevel("", &l));
  log::SetLevel(log::Level::kWarn);
  EXPECT_FALSE(log::Enabled(log::Level::kInfo));
  EXPECT_TRUE(log::Enabled(log::Level::kError));
  log::SetLevel(log::Level::kInfo);
}

}  // namespace
}  // namespace epochfs
