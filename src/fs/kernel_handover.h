// KernelHandover: the kernel's page cache as a tier of dataset bytes: what it
// holds of each file, kept in step with the RAM tier, and the one-copy hand-
// over (fuse.one_copy) of objects it holds whole (docs/architecture.md).
//
// With fuse.kernel_cache the kernel keeps the pages a READ is answered with.
// This room remembers which inode holds which object's (or block's) bytes, so
// that an object leaving the RAM tier drops them too (KernelCacheInvalidator),
// and drops at once what the RAM tier does not hold. With fuse.one_copy, once
// the kernel has been sent every byte of a resident object (KernelCoverage),
// the store hands the object over (CacheFront::HandOver): the RAM tier keeps
// a stub, the kernel the bytes. An open that finds the kernel holding its
// file keeps its pages (KernelHolds); a READ that still comes (the kernel
// lost pages) refills the object from LOWER (ObjectFor; a file of several
// blocks only in the blocks asked for, refill_reader.h), and bytes of
// another version are never mixed with the kernel's: those fail with ESTALE.
//
// Owns the invalidator and the coverage; the inode table is the Filesystem's
// (FsContext), and the passes of a session without OPEN are the DataView's
// (KeptByKernel says when one may end).
// Thread safety: thread-safe; called from request handlers and from the RAM
// tier's drop listener.
#pragma once

#include <fuse_lowlevel.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "block_reader.h"
#include "fs_common.h"
#include "kernel_cache.h"
#include "kernel_coverage.h"

namespace epochfs::fs {

// A session without OPEN (Role::kDataset): how many passes it keeps, and how
// many bytes of objects outside the RAM tier they may hold (pass_table.h).
constexpr size_t kMaxPasses = 256;
constexpr uint64_t kMaxPassHeldBytes = 64u << 20;
// fuse.no_open, one copy: a file of at most this size that the kernel lost
// some pages of goes back to it as soon as they are refilled (OpenFile::
// patch). A larger one stays in the RAM tier until the kernel has been sent
// all of it again: each refill reads the whole file from LOWER, and a reader
// that goes on reading what the kernel lost would refill it at every READ.
constexpr uint64_t kMaxPatchBytes = 4u << 20;
// One copy, with OPEN: a handed-over file gets a checksum per piece of this
// many bytes (cache.block_size if smaller), and a READ of pages the kernel
// lost reads back from LOWER only the pieces that hold them. The kernel's
// own reclaim (a proactive one such as DAMON's pageout takes cold pages a
// few at a time, uncounted in pgscan) loses scattered pages of files it
// holds whole: each costs a piece, not a block of cache.block_size.
constexpr uint64_t kMaxRefillPiece = 256u << 10;

class KernelHandover {
 public:
  // REQUIRES: `ctx` outlives the KernelHandover.
  explicit KernelHandover(const FsContext& ctx) : ctx_(ctx) {}

  // Starts and stops the invalidator (Filesystem::Attach, Detach).
  void Start(fuse_session* se);
  void Stop() { kernel_cache_.Stop(); }

  // The RAM tier dropped `id`: drops the kernel's pages of it and returns
  // their inode (0 when none was remembered).
  fuse_ino_t Dropped(cache::ObjectId id) { return kernel_cache_.Dropped(id); }
  // `id` left the RAM tier: forgets what the kernel was sent of it (its
  // pages leave the kernel with it).
  void ForgetCoverage(cache::ObjectId id) { coverage_.Forget(id); }
  // Drops the kernel's pages of `ino` now (of [off, off + len) when len > 0).
  void Drop(fuse_ino_t ino, uint64_t off = 0, uint64_t len = 0) {
    kernel_cache_.Drop(ino, off, len);
  }

  // At the open of a whole object (request `g`, inode `ino`): whether the
  // kernel may hold this version whole under the inode, so that the open's
  // Get takes a handed-over stub as a hit it serves from its pages
  // (GetRequest::kernel_holds).
  bool KernelHolds(fuse_ino_t ino, const store::GetRequest& g);
  // At the open of a whole object: `object` (of `id`) is served to inode
  // `ino`; `held`: the open asked for it as one the kernel may hold
  // (KernelHolds). Returns whether the kernel's pages of the inode may be kept.
  bool Opened(fuse_ino_t ino, cache::ObjectId id, const store::ObjectRef& object, bool held);
  // The kernel now holds pages of block `index` of open file `f` (`ino`).
  void RememberBlock(fuse_ino_t ino, const OpenFile& f, uint64_t index,
                     const store::ObjectRef& block);
  // True when the RAM tier holds `o`, itself or handed over to the kernel.
  bool Resident(const store::ObjectRef& o) const;

  // A mount with OPEN: the object a READ of open file `f` is served from,
  // and whether it was refilled for it.
  std::pair<Result<store::ObjectRef>, bool> ObjectFor(fuse_ino_t ino, OpenFile& f);
  // A mount with OPEN: the `n` bytes at `off` of `o` were sent to the kernel.
  void SentToKernel(const store::ObjectRef& o, uint64_t off, size_t n, bool refilled);
  // A mount with OPEN: the kernel was sent `n` bytes at `off` of handed-over
  // `stub`, read back from LOWER in blocks (refill_reader.h).
  void RefilledBlocks(fuse_ino_t ino, const store::ObjectRef& stub, uint64_t off, uint64_t n);
  // A mount with OPEN: open file `f` of `ino` is released.
  void LeftByOpen(fuse_ino_t ino, OpenFile& f);

  // Without OPEN: the `n` bytes at `off` of pass `f`'s object were sent to
  // the kernel. True when the object was handed over (the pass may end).
  bool KeptByKernel(fuse_ino_t ino, const std::shared_ptr<OpenFile>& f, uint64_t off, size_t n);
  // Without OPEN: the kernel was sent `piece` of a file in blocks.
  void BlockKeptByKernel(const BlockSlice& piece);
  // Without OPEN: the stub of `path`'s object when a READ at `off` may ask
  // for pages the kernel lost of a file it was handed whole; else null.
  store::ObjectRef HandedBefore(const std::string& path, off_t off) const;
  // Without OPEN: whether new pass `f` refills what the kernel lost of
  // `before` (HandedBefore), so that the object goes back at once.
  static bool Patches(const store::ObjectRef& before, const OpenFile& f);

 private:
  const FsContext& ctx_;
  KernelCacheInvalidator kernel_cache_;
  KernelCoverage coverage_;  // what the kernel holds of each object
};

}  // namespace epochfs::fs
