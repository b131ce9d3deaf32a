// The byte pool (byte_pool.h): a buffer taken is n zero bytes whether new or
// kept (one taken to be filled keeps its old bytes); a freed buffer of 32 KiB
// to 1 MiB is taken again by a load of about its size, and by no other; the
// bytes kept never pass kKeptBytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "epochfs/store/byte_pool.h"
#include "epochfs/store/object.h"

namespace epochfs::store {
namespace byte_pool_test {

bool AllZero(const std::vector<char>& v) {
  return std::all_of(v.begin(), v.end(), [](char c) { return c == 0; });
}

TEST(BytePool, AFreedBufferIsTakenAgainZeroedByALoadOfItsSize) {
  FreeKeptBuffers();
  const size_t n = 100 * 1024 + 1;
  std::vector<char> a = TakeBuffer(n);
  ASSERT_EQ(a.size(), n);
  EXPECT_TRUE(AllZero(a));
  std::fill(a.begin(), a.end(), 'x');
  const char* storage = a.data();
  GiveBuffer(std::move(a));
  EXPECT_TRUE(a.empty());
  std::vector<char> b = TakeBuffer(n - 100);  // within an eighth below its capacity
  EXPECT_EQ(b.data(), storage);
  ASSERT_EQ(b.size(), n - 100);
  EXPECT_TRUE(AllZero(b)) << "a kept buffer's old bytes are never handed out";
  GiveBuffer(std::move(b));
}

TEST(BytePool, ABufferToFillIsTakenWithoutZeroingAndTakeBufferStillZeroes) {
  FreeKeptBuffers();
  const size_t n = 100 * 1024 + 1;
  std::vector<char> a = TakeBufferToFill(n);
  ASSERT_EQ(a.size(), n);
  std::fill(a.begin(), a.end(), 'x');
  const char* storage = a.data();
  GiveBuffer(std::move(a));
  // Taken to be filled: the same storage, its size, its old bytes not
  // written over (a load's read overwrites them).
  std::vector<char> b = TakeBufferToFill(n - 100);
  EXPECT_EQ(b.data(), storage);
  ASSERT_EQ(b.size(), n - 100);
  EXPECT_EQ(std::count(b.begin(), b.end(), 'x'), static_cast<long>(n - 100));
  b.resize(n - 200);  // as a read shorter than the buffer leaves it
  GiveBuffer(std::move(b));
  // Larger than its last size: only the bytes past it are zeroes.
  std::vector<char> c = TakeBufferToFill(n);
  EXPECT_EQ(c.data(), storage);
  ASSERT_EQ(c.size(), n);
  EXPECT_EQ(std::count(c.begin(), c.end(), 0), 200);
  GiveBuffer(std::move(c));
  // TakeBuffer never hands the old bytes out.
  std::vector<char> d = TakeBuffer(n);
  EXPECT_EQ(d.data(), storage);
  EXPECT_TRUE(AllZero(d));
}

TEST(BytePool, ABufferIsNotTakenForASizeFarFromItsOwn) {
  FreeKeptBuffers();
  const size_t n = 200 * 1024 + 7;
  std::vector<char> a = TakeBuffer(n);
  const char* storage = a.data();
  GiveBuffer(std::move(a));
  std::vector<char> larger = TakeBuffer(n + 1);  // more than its capacity
  EXPECT_NE(larger.data(), storage);
  std::vector<char> smaller = TakeBuffer(n / 2);  // it would waste half
  EXPECT_NE(smaller.data(), storage);
  std::vector<char> fits = TakeBuffer(n);
  EXPECT_EQ(fits.data(), storage);
}

TEST(BytePool, SmallAndLargeBuffersAreFreedNotKept) {
  const size_t before = KeptBufferBytes();
  GiveBuffer(std::vector<char>(1000));
  GiveBuffer(std::vector<char>((1u << 20) + 4096));
  EXPECT_EQ(KeptBufferBytes(), before);
}

TEST(BytePool, TheBytesKeptStayWithinTheBound) {
  std::vector<std::vector<char>> many;
  for (int i = 0; i < 16; ++i) many.push_back(TakeBuffer(900 * 1024));
  for (auto& v : many) {
    GiveBuffer(std::move(v));
    EXPECT_LE(KeptBufferBytes(), kKeptBytes);
  }
  EXPECT_GE(KeptBufferBytes(), 3 * 900 * 1024u) << "up to the bound, they are kept";
  FreeKeptBuffers();
  EXPECT_EQ(KeptBufferBytes(), 0u);
}

TEST(BytePool, AnObjectGivesItsBytesBackWhenItGoes) {
  FreeKeptBuffers();
  const size_t n = 300 * 1024 + 11;
  const char* storage = nullptr;
  {
    auto obj = std::make_shared<Object>();
    obj->data = TakeBuffer(n);
    storage = obj->data.data();
    Object copy = *obj;  // a copy has bytes of its own
    EXPECT_NE(copy.data.data(), storage);
  }
  std::vector<char> again = TakeBuffer(n);
  EXPECT_EQ(again.data(), storage);
}

}  // namespace byte_pool_test
}  // namespace epochfs::store
