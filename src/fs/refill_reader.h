// Refill reads: a READ of a file the kernel was handed whole (fuse.one_copy,
// a mount that answers OPEN) that comes after the kernel lost some of its
// pages. A file of more than one block (its stub keeps a checksum per
// block of at most kMaxRefillPiece, kernel_handover.h: store::Object::
// block_sums) is read back only in the blocks that cover what the kernel
// asks for, each checked against the bytes handed
// over (CacheFront::RefillBlock); the stub stays in the RAM tier and the
// kernel keeps the rest of its pages, unless one copy's gate is shut and the
// file was lost from its start or keeps losing pages (CacheFront::
// RefillsWhole: then it is refilled whole and kept). A smaller file is refilled whole
// (KernelHandover::ObjectFor).
//
// An open keeps the two blocks it refilled last (OpenFile::refill), and its
// refills take turns (OpenFile::refill_mu), so the kernel's several READs of
// one block, concurrent or a little out of order around a block's end, read
// it from LOWER once: an open holds at most two blocks beside its stub.
// Internal to src/fs. Thread safety: readers of one open may race; its
// refills run one at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "block_reader.h"
#include "epochfs/common/status.h"
#include "epochfs/store/cache_front.h"
#include "open_file.h"

namespace epochfs::fs {

// The blocks of `block` bytes that hold [off, off + size) of a file of
// `file_size` bytes: `count` blocks from `first` (none at or past the end,
// for a read of 0 bytes, or when block is 0).
struct BlockSpan {
  uint64_t first = 0;
  uint64_t count = 0;
  bool operator==(const BlockSpan&) const = default;
};
BlockSpan BlocksCovering(uint64_t off, uint64_t size, uint64_t file_size, uint64_t block);

// True when a READ of open file `f` whose object is `o` is a refill that
// reads only blocks: `o` is a handed-over stub that keeps block checksums.
bool RefillsInBlocks(const store::ObjectRef& o);

// The pieces that answer a READ of `size` bytes at `off` of `stub`'s file
// (REQUIRES: RefillsInBlocks(stub)), each block the open does not keep read
// again from LOWER. Errors: those of CacheFront::RefillBlock (Stale: LOWER
// no longer holds the bytes handed over); the first one ends the read.
Result<std::vector<BlockSlice>> RefillRead(store::CacheFront& cache, OpenFile& f,
                                           const store::ObjectRef& stub, size_t size,
                                           uint64_t off);

}  // namespace epochfs::fs
