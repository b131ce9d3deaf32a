// RequestCost: estimates what one store request costs beyond its bytes
// (cache.request_bytes = "auto"), from the loads the store served.
//
// r, in bytes of transfer, is how NextUseCache weighs sizes: a miss of s
// bytes costs s + r. Each load reports its bytes and when it started at the
// store and ended (its wait for a read slot excluded). Over a window of
// kWindow loads:
//   d = a + b·s    least squares of duration on size: a is a request's fixed
//                  cost (latency), 1/b the bandwidth one request gets;
//   u = T·b        T = the window's bytes / its time (first start to last
//                  end): the share of that bandwidth the loads kept busy;
//   r = (a / b) · max(0, 1 − u).
// a/b is the latency in bytes of transfer. When the loads keep the store's
// bandwidth busy (u >= 1: a disk or a link they fill) a request's latency is
// hidden behind the others' transfers: r = 0, a byte is a byte. When they
// leave it idle (each loader waits out its request's latency: a store its
// readers do not fill) r tends to latency × bandwidth. Durations that do not
// grow with size (b <= 0): r = kMax, every request costs alike. A window
// whose sizes barely differ (their standard deviation under 1/16 of their
// mean) gives no estimate: there r changes no decision. The estimate is the
// mean of the windows' (each new one counted half), at most kMax.
// Limit: a wait in the store's own queue counts as a request's fixed cost,
// so a device whose throttle queues the loads (durations that barely grow
// with their own size) reads as latency-bound (docs/future_policy.md, "What
// a miss costs").
//
// Pure arithmetic: no clock, no I/O. Thread safety: none; the caller
// serialises.
#pragma once

#include <cstddef>
#include <cstdint>

namespace epochfs::cache {

class RequestCost {
 public:
  static constexpr size_t kWindow = 256;
  static constexpr uint64_t kMax = uint64_t{1} << 30;

  // A load of `bytes` that started at start_ns and ended at end_ns (>=
  // start_ns). True when it closed a window that changed bytes().
  bool OnLoad(uint64_t bytes, uint64_t start_ns, uint64_t end_ns);
  // The estimate; 0 until a window gave one.
  uint64_t bytes() const { return r_; }
  // Windows that gave an estimate so far.
  uint64_t estimates() const { return estimates_; }

 private:
  double n_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
  uint64_t first_ = 0, last_ = 0;
  uint64_t r_ = 0;
  uint64_t estimates_ = 0;
};

}  // namespace epochfs::cache
