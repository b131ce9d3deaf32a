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
// A file handed over with a checksum per piece (Object::block_sums) that
// loses pages is read back only in the pieces it lost, the kernel keeping the
// rest (CacheFront::RefillBlock), while the gate is open and, while it is
// shut, at a first loss of a few pages. The gate also weighs each such file's
// own losses (its refilled pieces, halved every kHalfLifeNs as well). While
// it is shut, a file is read back whole instead, and the daemon keeps that
// copy so that the kernel's next loss of it reads nothing from LOWER
// (RefillsWhole), when the kernel lost it from its first page (the read
// back would be all of it: a drop_caches, a reclaim of the whole file), or
// when its pieces read back have cost half of it (a file that keeps losing
// pages).
//
// Pure: no clock and no I/O of its own; the owner gives the times (steady
// nanoseconds). Not thread-safe: its owner (CacheFront) serializes the calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace epochfs::store {

class HandoverGate {
 public:
  // Losses count half after this long.
  static constexpr uint64_t kHalfLifeNs = 60ull * 1000 * 1000 * 1000;
  // Shut while the decayed losses are at least budget / kShutFraction.
  static constexpr uint64_t kShutFraction = 8;
  // While shut, a file's new loss is refilled whole when its earlier losses
  // (decayed) are at least its size / kAgainFraction.
  static constexpr uint64_t kAgainFraction = 2;
  // Files whose losses are remembered; past this, the oldest are forgotten.
  static constexpr size_t kMaxFiles = 4096;

  // The kernel lost `bytes` it had been handed; they were read again from
  // LOWER at `now_ns`.
  void Lost(uint64_t bytes, uint64_t now_ns);
  // Whether an object may be handed over at `now_ns` under a cache budget of
  // `budget` bytes (above). A budget of 0 shuts it at the first loss.
  bool Open(uint64_t budget, uint64_t now_ns) const;
  // The losses at `now_ns`, decayed (bytes).
  double LostBytes(uint64_t now_ns) const;

  // The kernel lost `bytes` of file `id` (pieces of it read again from LOWER
  // at `now_ns`): counted as Lost does, and as the file's own losses.
  void LostPieces(uint64_t id, uint64_t bytes, uint64_t now_ns);
  // File `id`'s own losses at `now_ns`, decayed (bytes).
  double FileLostBytes(uint64_t id, uint64_t now_ns) const;
  // Whether pages the kernel lost of file `id` (handed over, `size` bytes,
  // refillable in pieces) are read back whole at `now_ns`, for the daemon to
  // keep, rather than in the pieces lost. Only while the gate is shut (Open
  // is false). `new_loss`: nothing of this loss was read back yet (an
  // open's first refill); it is whole when the kernel asks from the file's
  // first byte (`from_start`: it lost the file's start, and with it,
  // likely, the rest) or the file's earlier losses are at least
  // size / kAgainFraction. Otherwise (the loss being read back in pieces
  // goes on) whole only once the file's losses pass its size.
  bool RefillsWhole(uint64_t id, uint64_t size, bool new_loss, bool from_start, uint64_t budget,
                    uint64_t now_ns) const;
  // File `id` is no longer the kernel's (read back whole, or dropped): its
  // own losses are forgotten.
  void Forget(uint64_t id);
  // Files whose losses are remembered (kMaxFiles at most).
  size_t files() const { return files_.size(); }

 private:
  struct Decayed {
    double bytes = 0;     // decayed bytes as of at_ns
    uint64_t at_ns = 0;   // time of the last addition
    double At(uint64_t now_ns) const;
    void Add(uint64_t bytes, uint64_t now_ns);
  };
  Decayed lost_;  // every loss
  std::unordered_map<uint64_t, Decayed> files_;  // each file's losses in pieces
};

}  // namespace epochfs::store
