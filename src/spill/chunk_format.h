// The on-disk layout of one spill backing file (docs/spill.md, "Spill store").
//
//   offset 0                 file header block (kBlock bytes): the file header
//                            in its first 64 bytes, then the index record of
//                            chunk group 0
//   IndexOffset(g), g >= 1   index block of chunk group g (its index record)
//   SlotOffset(i)            slot of chunk i: a chunk header block (kBlock
//                            bytes, the header in its first 64) followed by
//                            up to chunk_bytes stored bytes
//
// Chunks come in groups of kIndexChunks; the index block of group g >= 1 sits
// just before the group's first slot:
// SlotOffset(i) = kBlock + i * (kBlock + chunk_bytes) + (i / kIndexChunks) * kBlock.
// Every slot starts on a 4 KiB boundary, so a slot is read or written with one
// O_DIRECT request, and a raw chunk is written straight from its staging
// buffer (which has the same layout: header block, then the chunk's bytes).
//
// The written-chunk index: one bit per chunk, set when the chunk's slot was
// written with bytes below the file's end. A chunk whose bit is clear is a
// hole: it reads as zeros without I/O. A chunk whose bit is set must read back
// as a valid slot: a slot of zeros (a zeroed slot) or past the backing file's
// end (a truncated file) is damage, never a hole. Every group below the
// file's size has an index record (group 0 in the header block); a record
// that is missing or fails its checksum makes every chunk of its group count
// as written (holes of that group then read as errors, never as zeros).
//
// File header (little-endian): "EPSPILL1" magic, version, chunk_bytes,
// logical size, mode, uid, gid, mtime, XXH3 of the preceding bytes.
// Index record: magic, group number, the group's bitmap (kIndexBitmapBytes),
// XXH3 of the preceding record bytes.
// Chunk header: magic, ZVC mode, chunk index, logical length (bytes of the
// chunk below the file's size when it was written; the rest is zeros), stored
// length, XXH3 of the stored bytes, XXH3 of the preceding header bytes.
//
// Thread safety: pure functions.
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "epochfs/common/status.h"
#include "epochfs/spill/zvc.h"

namespace epochfs::spill {

inline constexpr uint32_t kBlock = 4096;  // O_DIRECT alignment and header block size

inline constexpr uint64_t RoundUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

// A chunk of `logical` bytes is stored in the ZVC mode `c` chose only when
// that saves at least one block of I/O; otherwise it is stored raw.
inline bool StoredCompressed(const ZvcChoice& c, uint64_t logical) {
  return c.mode != ZvcMode::kRaw && RoundUp(c.size, kBlock) < RoundUp(logical, kBlock);
}

// Chunks per index group, and the bytes of one group's bitmap.
inline constexpr uint64_t kIndexChunks = 16384;
inline constexpr size_t kIndexBitmapBytes = kIndexChunks / 8;
// An index record: 16 bytes (magic, group), the bitmap, 8 bytes of XXH3.
inline constexpr size_t kIndexRecordBytes = 16 + kIndexBitmapBytes + 8;
// Where group 0's record sits in the file header block.
inline constexpr size_t kIndexInHeader = 64;
static_assert(kIndexInHeader + kIndexRecordBytes <= kBlock);

inline constexpr uint64_t SlotOffset(uint64_t chunk, uint32_t chunk_bytes) {
  return kBlock + chunk * (uint64_t{kBlock} + chunk_bytes) + chunk / kIndexChunks * kBlock;
}
// The index block of group g >= 1.
inline constexpr uint64_t IndexOffset(uint64_t group, uint32_t chunk_bytes) {
  return SlotOffset(group * kIndexChunks, chunk_bytes) - kBlock;
}
// Number of chunks that hold a file of `size` logical bytes.
inline constexpr uint64_t ChunkCount(uint64_t size, uint32_t chunk_bytes) {
  return (size + chunk_bytes - 1) / chunk_bytes;
}
// Number of index groups of a file of `chunks` chunks.
inline constexpr uint64_t IndexGroups(uint64_t chunks) {
  return (chunks + kIndexChunks - 1) / kIndexChunks;
}

struct FileHeader {
  uint32_t chunk_bytes = 0;
  uint64_t size = 0;
  uint32_t mode = 0;  // S_IFREG | permission bits
  uint32_t uid = 0;
  uint32_t gid = 0;
  struct timespec mtime {};
};

// Writes the header into block[0, kBlock) (the rest of the block zeroed).
// REQUIRES: block.size() >= kBlock.
void EncodeFileHeader(const FileHeader& h, std::span<uint8_t> block);
// Corruption when the block is not a valid header.
Status DecodeFileHeader(std::span<const uint8_t> block, FileHeader* h);

struct ChunkHeader {
  ZvcMode mode = ZvcMode::kRaw;
  uint64_t chunk = 0;
  uint32_t logical_len = 0;  // bytes [0, logical_len) are stored; the rest are zeros
  uint32_t stored_len = 0;   // bytes after the header block
  uint64_t checksum = 0;     // XXH3 of the stored bytes
};

inline constexpr size_t kChunkHeaderBytes = 64;

// Writes the header into block[0, kBlock) (the rest of the block zeroed).
void EncodeChunkHeader(const ChunkHeader& h, std::span<uint8_t> block);

// Writes group `group`'s index record (bitmap: kIndexBitmapBytes) into
// out[0, kIndexRecordBytes).
void EncodeIndexRecord(uint64_t group, std::span<const uint8_t> bitmap, std::span<uint8_t> out);
// Corruption when `in` is not a valid record of `group` (zeros included);
// else copies its bitmap into `bitmap` (kIndexBitmapBytes).
Status DecodeIndexRecord(std::span<const uint8_t> in, uint64_t group, std::span<uint8_t> bitmap);

enum class ChunkHeaderKind { kValid, kAbsent, kBad };
// `block` is the header block, or the whole slot as read (header block and
// stored bytes). kAbsent: all of `block` is zeros (a slot never written, or
// zeroed: only the index tells them apart).
// kBad: anything else that is not a valid header, a zero header followed by
// other bytes included (then *why says what is wrong).
ChunkHeaderKind DecodeChunkHeader(std::span<const uint8_t> block, ChunkHeader* h,
                                  const char** why);

}  // namespace epochfs::spill
