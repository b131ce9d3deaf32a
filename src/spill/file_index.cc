// SpillFileImpl's written-chunk index (chunk_format.h): loaded at open,
// kept in SpillFileImpl::disk, written with the header (spill_file.h).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "epochfs/common/log.h"
#include "spill_file.h"

namespace epochfs::spill {

// A chunk whose bit is set is written (kUnknown until loaded), others are
// holes. A group whose record is missing or damaged counts as all written:
// its chunks load, and a slot that is not there is Corruption, never zeros.
void SpillFileImpl::LoadIndex(std::span<const uint8_t> bitmap0) {
  const uint32_t cb = c_.chunk_bytes();
  disk.assign(ChunkCount(size_, cb), 0);
  std::vector<uint8_t> bits(kIndexBitmapBytes);
  uint64_t damaged = 0;
  for (uint64_t g = 0; g < IndexGroups(disk.size()); ++g) {
    bool ok;
    if (g == 0) {
      ok = !bitmap0.empty();
      if (ok) std::copy(bitmap0.begin(), bitmap0.end(), bits.begin());
    } else {
      ok = ReadIndexBlock(fd_.get(), g, cb, bits).ok();
    }
    if (!ok) ++damaged;
    const uint64_t end = std::min<uint64_t>(disk.size(), (g + 1) * kIndexChunks);
    for (uint64_t c = g * kIndexChunks; c < end; ++c) {
      const uint64_t i = c - g * kIndexChunks;
      if (!ok || (bits[i / 8] >> (i % 8) & 1)) disk[c] = kUnknown;
    }
  }
  if (damaged) {
    log::Warn("spill: file " + rel_ + ": " + std::to_string(damaged) +
              " written-chunk index record(s) missing or damaged; their chunks count as written");
  }
}

void SpillFileImpl::MarkGroup(uint64_t group) {
  header_dirty_ = true;
  if (group > 0) index_dirty_.insert(group);
}

void SpillFileImpl::SetDisk(uint64_t c, uint32_t known) {
  if (c >= disk.size()) return;
  if ((disk[c] != 0) != (known != 0)) MarkGroup(c / kIndexChunks);
  disk[c] = known;
}

void SpillFileImpl::ResizeDisk(uint64_t chunks) {
  const uint64_t old_groups = IndexGroups(disk.size()), groups = IndexGroups(chunks);
  if (chunks < disk.size()) {
    index_dirty_.erase(index_dirty_.lower_bound(groups), index_dirty_.end());
    if (chunks > 0) MarkGroup((chunks - 1) / kIndexChunks);  // its bits past the end clear
  }
  disk.resize(chunks, 0);  // past the old end: holes
  // Every group below the size has a record on disk.
  for (uint64_t g = old_groups; g < groups; ++g) MarkGroup(g);
}

void SpillFileImpl::GroupBits(uint64_t group, uint8_t* bitmap) const {
  std::memset(bitmap, 0, kIndexBitmapBytes);
  const uint64_t end = std::min<uint64_t>(disk.size(), (group + 1) * kIndexChunks);
  for (uint64_t c = group * kIndexChunks; c < end; ++c) {
    const uint64_t i = c - group * kIndexChunks;
    if (disk[c] != 0) bitmap[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
  }
}

Status SpillFileImpl::WriteHeader() {
  std::vector<uint8_t> bits(kIndexBitmapBytes);
  // The index blocks first (one group at a time, the bitmap taken under the
  // lock), then the header block that commits the size.
  for (;;) {
    uint64_t g;
    {
      std::lock_guard lock(c_.mu);
      if (index_dirty_.empty()) break;
      g = *index_dirty_.begin();
      index_dirty_.erase(index_dirty_.begin());
      GroupBits(g, bits.data());
    }
    Status s = WriteIndexBlock(fd_.get(), g, c_.chunk_bytes(), bits);
    std::lock_guard lock(c_.mu);
    if (!s.ok()) {
      if (g < IndexGroups(disk.size())) MarkGroup(g);
      return s;
    }
    c_.CountHeaderWrite();
  }
  FileHeader h;
  {
    std::lock_guard lock(c_.mu);
    if (!header_dirty_) return Status::Ok();
    h.chunk_bytes = c_.chunk_bytes();
    h.size = size_;
    h.mode = mode_;
    h.uid = uid_;
    h.gid = gid_;
    h.mtime = mtime_;
    GroupBits(0, bits.data());
    header_dirty_ = false;
  }
  Status s = WriteHeaderBlock(fd_.get(), h, bits);
  std::lock_guard lock(c_.mu);
  if (!s.ok()) header_dirty_ = true;
  else c_.CountHeaderWrite();
  return s;
}

}  // namespace epochfs::spill
