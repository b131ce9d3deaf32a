// Staging: the spill store's bounded RAM chunk cache (docs/spill.md).
//
// A fixed pool of aligned buffers carved out of one anonymous mapping, each
// laid out as one on-disk slot (chunk_format.h: a header block, then
// chunk_bytes of data), so a slot is read or written by O_DIRECT straight
// from or into a buffer. `capacity` buffers back staged chunks (the budget:
// staging_bytes / chunk_bytes); `scratch` more are spare buffers for encoding
// and decoding compressed slots. Every buffer has a fixed index (its
// registered-buffer index in io_uring).
//
// An Entry is one staged chunk: its owner (an opaque pointer to the file), the
// chunk index, a buffer, a state, a pin count and its place in the LRU list.
//   kLoading  a read of the slot is in flight (buffer contents undefined)
//   kClean    the buffer equals the slot on disk (or the chunk is all zeros)
//   kDirty    the buffer is newer than the slot
//   kWriting  a write-back is in flight (buffer readable, not writable)
//   kFailed   the load failed (status kept for the next reader)
// Only unpinned kClean (and kFailed) entries may be evicted; dirty ones are
// written back first (by the store, which owns all I/O).
//
// Thread safety: none; the store's mutex guards every call and every Entry.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "epochfs/common/hash.h"
#include "epochfs/common/status.h"
#include "epochfs/spill/uring_engine.h"
#include "epochfs/spill/zvc.h"

namespace epochfs::spill {

struct Entry {
  enum class State : uint8_t { kFree, kLoading, kClean, kDirty, kWriting, kFailed };
  void* owner = nullptr;
  uint64_t chunk = 0;
  uint32_t buf = 0;  // buffer index
  State state = State::kFree;
  uint32_t pins = 0;
  Status error;  // kFailed: why
  // Write-back in flight: a scratch buffer for the encoded slot (-1: none),
  // the chunk's logical length, then (after encoding) its stored length and
  // whether it was compressed. Load in flight: io_stored is the number of
  // bytes of the chunk below the file's end.
  int scratch = -1;
  bool wb_failed = false;  // the last write-back failed: only Sync/WriteOut retry it
  uint32_t io_stored = 0;
  bool io_compressed = false;
  // Write-back in flight: the ZVC counts of the chunk's logical bytes, when known
  // (io_counts_ok), so the engine chooses the mode without a counting pass.
  bool io_counts_ok = false;
  bool io_count_pass = false;  // the engine counted the chunk itself
  ZvcCounts io_counts;
  // The ZVC counts of the buffer's first `counted` data bytes while counts_ok;
  // the bytes past `counted` are then zeros. Kept by CopyIntoChunk, which
  // counts while it copies; anything else that changes the buffer's bytes
  // clears counts_ok (Allocate does, so a loaded chunk starts uncounted).
  // Changed only by the one writer holding a pin (the file's op mutex), read
  // by the store when the entry is unpinned.
  bool counts_ok = false;
  uint32_t counted = 0;
  ZvcCounts counts;
  // The checksum of the buffer's first `summed` data bytes while sum_ok, fed
  // by CopyIntoChunk from the writer's bytes right after it copied them
  // (still in the cache), so that the write-back of a raw chunk needs no
  // pass of its own over the buffer. Same ownership as the counts.
  bool sum_ok = false;
  uint32_t summed = 0;
  ChecksumStream sum;
  // Write-back in flight: the checksum of the chunk's logical bytes, when
  // the kept one covers exactly them (io_sum_ok).
  bool io_sum_ok = false;
  uint64_t io_sum = 0;
  // A raw chunk loaded whose stored bytes are not checked yet: the first
  // Pin checks their checksum (`verify_sum` over `verify_len` bytes) on the
  // pinning thread, right before it uses them, while they are still to be
  // read into the cache (the load's other checks ran on the I/O thread).
  bool unverified = false;
  uint32_t verify_len = 0;
  uint64_t verify_sum = 0;
  Entry* prev = nullptr;   // LRU list (head: least recently used)
  Entry* next = nullptr;
  IoOp op;
};

// The buffer of `e` now holds only zeros: its counts are exact (and zero),
// its kept checksum covers nothing yet.
inline void CountsZeroed(Entry* e) {
  e->counts_ok = true;
  e->counted = 0;
  e->counts = {};
  e->sum_ok = true;
  e->summed = 0;
}

// The buffer of `e` changed other than through CopyIntoChunk: nothing kept
// about it holds.
inline void ForgetKept(Entry* e) {
  e->counts_ok = false;
  e->sum_ok = false;
}

// Copies `in` to data + lo, where `data` is e's chunk data (chunk_bytes long),
// and keeps e's counts: a write of the whole chunk sets them; a write at or
// past `counted` that starts on a 4-byte boundary (after a counted run that
// ended on one) adds its counts; one from 0 that covers every counted byte
// replaces them; any other write clears counts_ok (a plain copy). It keeps
// e's checksum the same way, except that a write must start exactly at
// `summed` to extend it (or at 0, covering every summed byte, to restart it),
// and drops it once the counts show the chunk so far would be stored
// compressed (the slot's checksum is then over the encoded bytes).
// REQUIRES: the caller pins e for writing; lo + in.size() <= chunk_bytes.
void CopyIntoChunk(Entry* e, uint8_t* data, uint32_t chunk_bytes, uint32_t lo,
                   std::span<const uint8_t> in);

// The counts of e's first `logical` data bytes, if the kept counts give them.
bool CountsFor(const Entry& e, uint32_t logical, ZvcCounts* out);
// The checksum (common/hash.h) of e's first `logical` data bytes, if the kept
// checksum covers exactly them.
bool SumFor(const Entry& e, uint32_t logical, uint64_t* out);

class Staging {
 public:
  // REQUIRES: capacity >= 1.
  static Result<std::unique_ptr<Staging>> Create(uint32_t chunk_bytes, size_t buf_bytes,
                                                 uint32_t capacity, uint32_t scratch);
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  uint8_t* buffer(uint32_t index) const { return base_ + size_t{index} * buf_bytes_; }
  size_t buf_bytes() const { return buf_bytes_; }
  uint32_t capacity() const { return capacity_; }
  std::vector<iovec> Iovecs() const;

  // A free entry (its buffer's contents undefined), or nullptr when all
  // `capacity` entries are in use. The entry is placed at the MRU end.
  Entry* Allocate(void* owner, uint64_t chunk);
  // Returns an entry (not pinned, no I/O in flight) to the free list.
  void Release(Entry* e);
  // Least recently used evictable (unpinned, clean or failed) entry, or nullptr.
  Entry* EvictionCandidate() const;
  void Touch(Entry* e);  // moves e to the MRU end
  Entry* lru_head() const { return lru_head_; }

  // Scratch buffers (not counted as staged bytes). -1 when none is free.
  int TakeScratch();
  void ReturnScratch(uint32_t index) { free_scratch_.push_back(index); }

  // State changes go through SetState so that the counters stay exact.
  void SetState(Entry* e, Entry::State s);
  uint32_t used() const { return used_; }
  uint32_t dirty() const { return dirty_; }  // kDirty + kWriting

 private:
  Staging() = default;
  void Unlink(Entry* e);
  void PushBack(Entry* e);

  uint8_t* base_ = nullptr;
  size_t map_bytes_ = 0;
  size_t buf_bytes_ = 0;
  uint32_t capacity_ = 0;
  std::vector<Entry> entries_;
  std::vector<Entry*> free_entries_;
  std::vector<uint32_t> free_scratch_;
  Entry* lru_head_ = nullptr;
  Entry* lru_tail_ = nullptr;
  uint32_t used_ = 0;
  uint32_t dirty_ = 0;
};

}  // namespace epochfs::spill
