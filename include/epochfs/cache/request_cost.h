// RequestCost: estimates what one store request costs beyond its bytes
// (cache.request_bytes = "auto"), from the loads the store served.
//
// r, in bytes of transfer, is how NextUseCache weighs sizes: a miss of s
// bytes costs s + r. Each load reports its bytes, when it started at the
// store and ended (its wait for a read slot excluded), and how many other
// loads were under way when it started (q). Over a window of kWindow loads:
//   d = a + b·s + c·q    least squares of duration on size and loads ahead:
//                  a is what a request costs when it has the store to itself
//                  (latency), 1/b the bandwidth one request gets, c what each
//                  load under way adds (a queue: a throttle, an IOPS limit;
//                  without spread in q, as with one loader, c = 0);
//   u = T·b        T = the window's bytes / its time (first start to last
//                  end): the share of that bandwidth the loads kept busy;
//   r = (a / b) · max(0, 1 − u).
// a/b is the latency in bytes of transfer. When the loads keep the store's
// bandwidth busy (u >= 1: a disk or a link they fill) a request's latency is
// hidden behind the others' transfers: r = 0, a byte is a byte. When they
// leave it idle (each loader waits out its request's latency: a store its
// readers do not fill) r tends to latency × bandwidth, at most kMax (a store
// whose durations barely grow with size: every request costs alike). A
// window whose durations shrink with size (b <= 0: noise larger than the
// bytes' part) gives no estimate, nor one whose sizes barely differ (their
// standard deviation under 1/16 of their mean): there r changes no decision. The estimate is the
// mean of the windows' (each new one counted half), at most kMax.
// A store that serves one request at a time at an IOPS limit thus gives
// r = bandwidth / IOPS, as it should. Limit: a queue that does not grow with
// the loads this daemon has under way (other clients of the store) still
// reads as latency.
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
  // `others`: the loads at the store when it started.
  bool OnLoad(uint64_t bytes, uint64_t start_ns, uint64_t end_ns, uint32_t others = 0);
  // The estimate; 0 until a window gave one.
  uint64_t bytes() const { return r_; }
  // Windows that gave an estimate so far.
  uint64_t estimates() const { return estimates_; }

 private:
  double n_ = 0, sx_ = 0, sy_ = 0, sq_ = 0, sxx_ = 0, sxy_ = 0, sqq_ = 0, sxq_ = 0, sqy_ = 0;
  uint64_t first_ = 0, last_ = 0;
  uint64_t r_ = 0;
  uint64_t estimates_ = 0;
};

}  // namespace epochfs::cache
