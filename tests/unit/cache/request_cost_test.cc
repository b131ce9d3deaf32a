// RequestCost: r from the loads, on stores built to bind one way or the
// other: latency hidden behind a full link (r = 0), latency waited out on an
// idle link (latency × bandwidth, scaled by the idle share), durations that
// ignore size (the cap), sizes too alike to fit (no estimate).
#include "epochfs/cache/request_cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace epochfs::cache {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

uint64_t SizeAt(size_t i) { return 32 * KiB + (i * 7919) % (160 * KiB); }

// One loader: each load takes latency + s / bandwidth, then `gap_ns` of
// compute before the next. Returns the window's T·b (bytes / time × 1/bw).
double LoneLoader(RequestCost* rc, uint64_t latency_ns, uint64_t bw, uint64_t gap_ns,
                  size_t loads) {
  uint64_t t = 1'000'000, bytes = 0;
  const uint64_t t0 = t;
  for (size_t i = 0; i < loads; ++i) {
    const uint64_t s = SizeAt(i);
    const uint64_t d = latency_ns + s * 1'000'000'000 / bw;
    rc->OnLoad(s, t, t + d);
    bytes += s;
    t += d + gap_ns;
  }
  return double(bytes) / (double(t - gap_ns - t0) * 1e-9) / double(bw);
}

TEST(RequestCost, ALoaderThatWaitsOutItsLatencyCostsLatencyTimesBandwidth) {
  RequestCost rc;
  EXPECT_EQ(rc.bytes(), 0u);
  const double used = LoneLoader(&rc, 2'000'000, 250 * MiB, 8'000'000, RequestCost::kWindow);
  ASSERT_EQ(rc.estimates(), 1u);
  const double want = 0.002 * 250 * MiB * (1 - used);  // 512 KiB × the idle share
  EXPECT_GT(used, 0.01);
  EXPECT_LT(used, 0.2);
  EXPECT_NEAR(double(rc.bytes()), want, want * 0.01);
}

TEST(RequestCost, LatencyHiddenBehindAFullLinkCostsNothing) {
  // Six loads always in flight over one link (8 MiB/s, 1 ms latency, FIFO):
  // the link never idles, so each request's latency overlaps others' bytes.
  RequestCost rc;
  const uint64_t bw = 8 * MiB, latency = 1'000'000;
  uint64_t link_free = 0;
  std::vector<uint64_t> slots(6, 0);  // when each of the six is free again
  for (size_t i = 0; i < 2 * RequestCost::kWindow; ++i) {
    auto slot = std::min_element(slots.begin(), slots.end());
    const uint64_t start = *slot, s = SizeAt(i);
    const uint64_t end = std::max(start + latency, link_free) + s * 1'000'000'000 / bw;
    link_free = end;
    *slot = end;
    rc.OnLoad(s, start, end);
  }
  EXPECT_EQ(rc.estimates(), 2u);
  EXPECT_EQ(rc.bytes(), 0u);
}

// One server, one request at a time (an IOPS limit: 1/300 s each, plus its
// bytes at 1 GiB/s), and 1 to 6 loaders at a time keeping it busy (phases of
// 16 loads): a load waits for the k - 1 ahead of it, then is served. Told
// how many were ahead, the fit finds what one request costs alone
// (bandwidth / IOPS, about 3.5 MB); not told, it takes the mean queue for a
// latency and says 3.5 times that.
TEST(RequestCost, AQueueIsNotALatency) {
  const uint64_t bw = 1024 * MiB, service = 1'000'000'000 / 300;
  const uint64_t mean_service = service + 96 * KiB * 1'000'000'000 / bw;
  auto run = [&](bool tell) {
    RequestCost rc;
    uint64_t t = 0;
    for (size_t i = 0; i < RequestCost::kWindow; ++i) {
      const uint64_t s = SizeAt(i);
      const uint64_t ahead = (i / 16) % 6;  // k - 1
      const uint64_t own = service + s * 1'000'000'000 / bw;
      rc.OnLoad(s, t, t + ahead * mean_service + own,
                tell ? static_cast<uint32_t>(ahead) : 0);
      t += own;  // the server finishes one load per `own`
    }
    return double(rc.bytes());
  };
  const double alone = double(service) * 1e-9 * double(bw);
  EXPECT_NEAR(run(true), alone, alone * 0.1);
  EXPECT_GT(run(false), 3 * alone);
}

TEST(RequestCost, DurationsThatBarelyGrowWithSizeAreCappedAndShrinkingOnesIgnored) {
  RequestCost rc;  // 30 ms a request, 1 ns per KiB: every request costs alike
  for (size_t i = 0; i < RequestCost::kWindow; ++i) {
    rc.OnLoad(SizeAt(i), i * 100'000'000, i * 100'000'000 + 30'000'000 + SizeAt(i) / KiB);
  }
  EXPECT_EQ(rc.bytes(), RequestCost::kMax);
  RequestCost shrinking;  // larger loads ended sooner: noise, not a cost
  for (size_t i = 0; i < RequestCost::kWindow; ++i) {
    shrinking.OnLoad(SizeAt(i), i * 100'000'000,
                     i * 100'000'000 + 30'000'000 - SizeAt(i) / KiB * 1000);
  }
  EXPECT_EQ(shrinking.estimates(), 0u);
  EXPECT_EQ(shrinking.bytes(), 0u);
}

TEST(RequestCost, SizesTooAlikeGiveNoEstimate) {
  RequestCost rc;
  for (size_t i = 0; i < 3 * RequestCost::kWindow; ++i) {
    rc.OnLoad(110 * KiB + i % 7, i * 10'000'000, i * 10'000'000 + 3'000'000 + i % 5);
  }
  EXPECT_EQ(rc.estimates(), 0u);
  EXPECT_EQ(rc.bytes(), 0u);
}

TEST(RequestCost, EachNewWindowCountsHalf) {
  RequestCost rc;
  LoneLoader(&rc, 2'000'000, 250 * MiB, 8'000'000, RequestCost::kWindow);
  const double first = double(rc.bytes());
  RequestCost alone;  // what the second store gives by itself
  LoneLoader(&alone, 4'000'000, 250 * MiB, 8'000'000, RequestCost::kWindow);
  LoneLoader(&rc, 4'000'000, 250 * MiB, 8'000'000, RequestCost::kWindow);
  EXPECT_EQ(rc.estimates(), 2u);
  EXPECT_NEAR(double(rc.bytes()), (first + double(alone.bytes())) / 2, 2.0);
  EXPECT_GT(alone.bytes(), rc.bytes());
}

}  // namespace
}  // namespace epochfs::cache
