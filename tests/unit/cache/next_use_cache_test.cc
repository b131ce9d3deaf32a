// NextUseCache's choice of victim: what a miss costs the store weighs the
// objects' sizes (request_bytes), over a future whose next uses are fixed.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "epochfs/cache/next_use_cache.h"

namespace epochfs::cache {
namespace {

// One job; object o is next read at time `now` + next[o] (pace 1 ns per
// position, nothing done yet).
class FixedFuture final : public Future {
 public:
  explicit FixedFuture(std::map<ObjectId, uint64_t> next) : next_(std::move(next)) {}
  size_t Slots() const override { return 64; }
  size_t Slot(ObjectId object) const override { return static_cast<size_t>(object); }
  bool NextUse(ObjectId object, Use* out) const override {
    auto it = next_.find(object);
    if (it == next_.end()) return false;
    *out = Use{0, it->second};
    return true;
  }
  size_t Jobs() const override { return 1; }
  Line LineOf(uint32_t, uint64_t now) const override {
    Line l;
    l.origin = now;
    l.pace = 1.0;
    l.floor = now;
    return l;
  }

 private:
  std::map<ObjectId, uint64_t> next_;
};

// Budget 500 holds A (object 1, 400 bytes, next read in 10 us) and b (object
// 2, 100 bytes, in 30 us); c (object 3, 100 bytes, in 20 us) misses. Keeping
// A saves 400 bytes of transfer and one request, keeping b 100 bytes and one
// request.
std::vector<ObjectId> VictimsOfC(uint64_t request_bytes) {
  FixedFuture future({{1, 10000}, {2, 30000}, {3, 20000}});
  NextUseCache cache(500, future, request_bytes);
  EXPECT_TRUE(cache.OnMiss({1, 400, 0, 0, 1}).admit);
  EXPECT_TRUE(cache.OnMiss({2, 100, 0, 1, 2}).admit);
  const Decision d = cache.OnMiss({3, 100, 0, 2, 3});
  EXPECT_TRUE(d.admit);
  EXPECT_TRUE(cache.CheckInvariants().ok());
  EXPECT_LE(cache.used(), 500u);
  return d.evict;
}

TEST(NextUseCache, ABandwidthBoundStoreDropsTheFurthestWhateverItsSize) {
  // request_bytes 0: a byte is a byte; b, read last, goes.
  EXPECT_EQ(VictimsOfC(0), std::vector<ObjectId>{2});
  // A request costing 50 bytes: A saves 450 per 400 held for 10 us, b 150
  // per 100 for 30 us: b still goes.
  EXPECT_EQ(VictimsOfC(50), std::vector<ObjectId>{2});
}

TEST(NextUseCache, ARequestBoundStoreDropsTheLargestByteTime) {
  // 1 GiB per request: every miss costs about the same, so the object that
  // holds the most bytes for the longest (A: 400 x 10 us against 100 x 30
  // us) goes.
  EXPECT_EQ(VictimsOfC(1ull << 30), std::vector<ObjectId>{1});
}

TEST(NextUseCache, TheNewObjectIsBypassedWhenItIsWorthLeast) {
  // c read after both (40 us): with request_bytes 0 it is the furthest, so
  // it is not admitted and nothing goes.
  FixedFuture future({{1, 10000}, {2, 30000}, {3, 40000}});
  NextUseCache cache(500, future, 0);
  EXPECT_TRUE(cache.OnMiss({1, 400, 0, 0, 1}).admit);
  EXPECT_TRUE(cache.OnMiss({2, 100, 0, 1, 2}).admit);
  const Decision d = cache.OnMiss({3, 100, 0, 2, 3});
  EXPECT_FALSE(d.admit);
  EXPECT_TRUE(d.evict.empty());
  EXPECT_EQ(cache.used(), 500u);
}

}  // namespace
}  // namespace epochfs::cache
