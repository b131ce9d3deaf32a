#include "block_reader.h"

#include <algorithm>
#include <mutex>

#include "epochfs/store/object.h"

namespace epochfs::fs {

uint64_t EffectiveBlockSize(uint64_t configured, uint64_t max_object) {
  constexpr uint64_t kMin = 64u << 10;
  const uint64_t b = std::min(configured, max_object) & ~uint64_t{4095};
  return std::max(b, kMin);
}

Result<store::ObjectRef> BlockOf(store::CacheFront& cache, OpenFile& f, uint64_t index) {
  {
    std::lock_guard lock(f.mu);
    if (f.object && f.block_index == index) return f.object;
  }
  store::GetRequest g;
  g.id = store::BlockIdOf(f.path, index);
  g.rel = f.path;
  g.version = f.version;
  g.offset = index * f.block_size;
  g.length = f.block_size;
  Result<store::ObjectRef> got = cache.Get(g);
  if (!got.ok()) return got;
  std::lock_guard lock(f.mu);
  f.object = got.value();
  f.block_index = index;
  return got;
}

Result<std::vector<BlockSlice>> ReadBlocks(store::CacheFront& cache, OpenFile& f, size_t size,
                                           uint64_t off) {
  std::vector<BlockSlice> out;
  const uint64_t file_size = f.version.size;
  if (off >= file_size || size == 0) return out;
  const uint64_t end = off + std::min<uint64_t>(size, file_size - off);
  const uint64_t b = f.block_size;
  for (uint64_t pos = off; pos < end;) {
    const uint64_t index = pos / b;
    Result<store::ObjectRef> block = BlockOf(cache, f, index);
    if (!block.ok()) return block.status();
    const uint64_t start = index * b;
    const std::vector<char>& data = block.value()->data;
    const uint64_t stop = std::min(end, start + data.size());
    // A block holds what the opened version has of its range (CacheFront::Get).
    if (stop <= pos) return Internal(f.path + ": block " + std::to_string(index) + " is short");
    out.push_back({block.value(), index, data.data() + (pos - start),
                   static_cast<size_t>(stop - pos)});
    pos = stop;
  }
  return out;
}

}  // namespace epochfs::fs
