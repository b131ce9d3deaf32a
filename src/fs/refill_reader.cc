#include "refill_reader.h"

#include <algorithm>
#include <string>

namespace epochfs::fs {

BlockSpan BlocksCovering(uint64_t off, uint64_t size, uint64_t file_size, uint64_t block) {
  if (block == 0 || size == 0 || off >= file_size) return {};
  const uint64_t end = off + std::min(size, file_size - off);
  const uint64_t first = off / block;
  return {first, (end - 1) / block - first + 1};
}

bool RefillsInBlocks(const store::ObjectRef& o) {
  return o && o->handed_over && o->sum_block != 0 && !o->block_sums.empty();
}

Result<std::vector<BlockSlice>> RefillRead(store::CacheFront& cache, OpenFile& f,
                                           const store::ObjectRef& stub, size_t size,
                                           uint64_t off) {
  std::vector<BlockSlice> out;
  const uint64_t b = stub->sum_block;
  const uint64_t file_size = stub->handed_size;
  const BlockSpan span = BlocksCovering(off, size, file_size, b);
  const uint64_t end = off + std::min<uint64_t>(size, file_size - std::min(off, file_size));
  std::lock_guard lock(f.refill_mu);
  for (uint64_t i = span.first; i < span.first + span.count; ++i) {
    store::ObjectRef block;
    for (const OpenFile::Refilled& kept : f.refill) {
      if (kept.block && kept.index == i) block = kept.block;
    }
    if (!block) {
      store::GetRequest g{stub->id, f.path, stub->version, f.job, f.sample};
      g.heard = true;
      // This open's first refill makes its hit a refill, once (refill_mu
      // serialises the open's block refills).
      Result<store::ObjectRef> got =
          cache.RefillBlock(g, stub, i, !f.refilled.load(std::memory_order_relaxed));
      if (!got.ok()) return got.status();
      block = got.value();
      f.refilled.store(true, std::memory_order_relaxed);
      f.refill[1] = std::move(f.refill[0]);
      f.refill[0] = {block, i};
    }
    const uint64_t start = i * b;
    const uint64_t from = std::max(off, start);
    const uint64_t stop = std::min(end, start + block->data.size());
    if (stop <= from) return Internal(f.path + ": refilled block " + std::to_string(i) + " is short");
    out.push_back({block, i, block->data.data() + (from - start), static_cast<size_t>(stop - from)});
  }
  return out;
}

}  // namespace epochfs::fs
