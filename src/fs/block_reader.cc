#include "block_reader.h"

#include <algorithm>
#include <future>
#include <mutex>
#include <system_error>

#include "epochfs/store/object.h"

namespace epochfs::fs {

uint64_t EffectiveBlockSize(uint64_t configured, uint64_t max_object) {
  constexpr uint64_t kMin = 64u << 10;
  const uint64_t b = std::min(configured, max_object) & ~uint64_t{4095};
  return std::max(b, kMin);
}

namespace {

store::GetRequest BlockRequest(const OpenFile& f, uint64_t index) {
  store::GetRequest g;
  g.id = store::BlockIdOf(f.path, index * f.block_size, f.block_size);
  g.rel = f.path;
  g.version = f.version;
  g.offset = index * f.block_size;
  g.length = f.block_size;
  g.file = f.file_id;
  g.job = f.job;
  g.sample = f.sample;
  return g;
}

}  // namespace

Result<store::ObjectRef> BlockOf(store::CacheFront& cache, OpenFile& f, uint64_t index) {
  // Futures taken out of `f` are dropped outside its lock: the last reference
  // to a running std::async load waits for it.
  std::shared_future<Result<store::ObjectRef>> pending, stale;
  bool sequential = false;
  {
    std::lock_guard lock(f.mu);
    if (f.object && f.block_index == index) return f.object;
    if (f.ahead.valid() && f.ahead_index == index) {
      pending = std::move(f.ahead);  // (leaves f.ahead empty)
    } else if (f.ahead.valid() && f.ahead_index < index) {
      stale = std::move(f.ahead);  // the reader went past it
    }
    sequential = f.object ? f.block_index + 1 == index : index == 0;
  }
  Result<store::ObjectRef> got =
      pending.valid() ? pending.get() : cache.Get(BlockRequest(f, index));
  if (!got.ok()) return got;
  const uint64_t next = index + 1;
  std::lock_guard lock(f.mu);
  // A late READ of the block before the one held (the kernel's read-ahead
  // READs may be answered out of order) leaves the held one in place.
  if (!f.object || index + 1 != f.block_index) {
    f.object = got.value();
    f.block_index = index;
  }
  if (sequential && next * f.block_size < f.version.size && !f.ahead.valid()) {
    try {
      f.ahead = std::async(std::launch::async,
                           [&cache, req = BlockRequest(f, next)] { return cache.Get(req); })
                    .share();
      f.ahead_index = next;
    } catch (const std::system_error&) {
      // No thread to be had (a resource limit): the reader loads it when it
      // gets there.
    }
  }
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
