// HandoverGate: whether one copy (fuse.one_copy) hands a fully sent object
// over to the kernel's page cache now, or the daemon keeps its own copy.
//
// A handed-over object lives only in the kernel's pages. When the kernel lets
// go of them (memory pressure, a drop_caches on the machine, its inodes
// reclaimed), the next read of the object reads it again from LOWER (a
// refill): bytes no policy chose to read, which two copies would not have
// cost. One loss now and then is the price of one copy; a kernel that keeps
// dropping what it is handed makes one copy read LOWER again and again. The
// gate weighs the bytes the kernel lost (Lost: the refills' bytes), halved
// every kHalfLifeNs, against the cache budget: while they amount to
// kShutFraction of the budget or more, no object is handed over, so that each
// object read in that time keeps the daemon's copy (the kernel's pages beside
// it are a duplicate the kernel may drop at no cost: a READ is then answered
// from RAM). The gate opens again once the losses have decayed below that.
//
// Pure: no clock and no I/O of its own; the owner gives the times (steady
// nanoseconds). Not thread-safe: its owner (CacheFront) serializes the calls.
#pragma once

#include <cstdint>

namespace epochfs::store {

class HandoverGate {
 public:
  // Losses count half after this long.
  static constexpr uint64_t kHalfLifeNs = 60ull * 1000 * 1000 * 1000;
  // Shut while the decayed losses are at least budget / kShutFraction.
  static constexpr uint64_t kShutFraction = 8;

  // The kernel lost `bytes` it had been handed; they were read again from
  // LOWER at `now_ns`.
  void Lost(uint64_t bytes, uint64_t now_ns);
  // Whether an object may be handed over at `now_ns` under a cache budget of
  // `budget` bytes (above). A budget of 0 shuts it at the first loss.
  bool Open(uint64_t budget, uint64_t now_ns) const;
  // The losses at `now_ns`, decayed (bytes).
  double LostBytes(uint64_t now_ns) const;

 private:
  double lost_ = 0;     // decayed loss bytes as of at_ns_
  uint64_t at_ns_ = 0;  // time of the last Lost
};

}  // namespace epochfs::store
