// Block reads: a dataset file larger than the largest object cached whole
// (CacheFront::max_object_bytes()) is cached in blocks of cache.block_size
// bytes, each an object of its own (store::BlockIdOf) under the same budget
// and policy. An open of such a file (OpenFile::Kind::kBlocks) keeps the
// block it read last, so a sequential reader's many READs of one block are
// one access to the policy; a READ that spans blocks takes each.
//
// Read-ahead: when an open takes block k right after block k-1 (or block 0
// first), the load of block k+1 starts at once on a thread of its own
// (CacheFront::Get: a hit, a load, or joining another reader's), so a
// sequential reader finds it ready; when it gets there it takes that load's
// result instead of asking again, so the policy hears of each block once, when
// its read-ahead began. A random reader starts none. An open holds at most
// two blocks (its current one and the one ahead); closing it waits for a load
// still running (bounded by lower.timeout).
//
// Every block is of the version the open saw (OpenFile::version): a block
// whose file changed on LOWER is Stale (CacheFront::Get), never mixed in.
// Internal to src/fs. Thread safety: readers of one open may race; the
// remembered block is guarded by OpenFile::mu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/store/cache_front.h"
#include "open_file.h"

namespace epochfs::fs {

// The block size for files too large to cache whole: `configured`
// (cache.block_size), at most `max_object` so that a block can be admitted,
// at least 64 KiB, a multiple of 4 KiB. REQUIRES: configured > 0.
uint64_t EffectiveBlockSize(uint64_t configured, uint64_t max_object);

// Block `index` of `f` (REQUIRES: f.kind == kBlocks, index inside the file):
// the one this open read last, else from the cache (a hit or a load, which
// the policy hears of as a read of that block).
Result<store::ObjectRef> BlockOf(store::CacheFront& cache, OpenFile& f, uint64_t index);

// One piece of a read's reply: `len` bytes at `data`, inside `block`, which
// keeps them alive until the reply is sent.
struct BlockSlice {
  store::ObjectRef block;
  uint64_t index = 0;
  const char* data = nullptr;
  size_t len = 0;
};
// The pieces that answer a read of `size` bytes at `off`, in order (none at
// or past the end of the file). Errors: those of BlockOf; the first one ends
// the read.
Result<std::vector<BlockSlice>> ReadBlocks(store::CacheFront& cache, OpenFile& f, size_t size,
                                           uint64_t off);

}  // namespace epochfs::fs
