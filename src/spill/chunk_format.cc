#include "chunk_format.h"

#include <cstring>
#include <string>

#include "epochfs/common/hash.h"

namespace epochfs::spill {
namespace {

constexpr char kFileMagic[8] = {'E', 'P', 'S', 'P', 'I', 'L', 'L', '1'};
// 2: the written-chunk index (version 1 had none: its holes and its lost
// slots looked the same).
constexpr uint32_t kFileVersion = 2;
constexpr uint32_t kIndexMagic = 0x58444950;  // "PIDX"
constexpr uint32_t kChunkMagic = 0x4b484350;  // "PCHK"
constexpr uint8_t kChunkVersion = 1;
constexpr size_t kFileHeaderBytes = 64;

void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t Get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

void EncodeFileHeader(const FileHeader& h, std::span<uint8_t> block) {
  uint8_t* p = block.data();
  std::memset(p, 0, kBlock);
  std::memcpy(p, kFileMagic, 8);
  Put32(p + 8, kFileVersion);
  Put32(p + 12, h.chunk_bytes);
  Put64(p + 16, h.size);
  Put32(p + 24, h.mode);
  Put32(p + 28, h.uid);
  Put32(p + 32, h.gid);
  Put64(p + 36, static_cast<uint64_t>(h.mtime.tv_sec));
  Put32(p + 44, static_cast<uint32_t>(h.mtime.tv_nsec));
  Put64(p + kFileHeaderBytes - 8, Checksum(p, kFileHeaderBytes - 8));
}

Status DecodeFileHeader(std::span<const uint8_t> block, FileHeader* h) {
  if (block.size() < kFileHeaderBytes) return Corruption("spill file header is truncated");
  const uint8_t* p = block.data();
  if (std::memcmp(p, kFileMagic, 8) != 0) return Corruption("not a spill file (bad magic)");
  if (Get64(p + kFileHeaderBytes - 8) != Checksum(p, kFileHeaderBytes - 8)) {
    return Corruption("spill file header checksum mismatch");
  }
  if (Get32(p + 8) != kFileVersion) {
    return Status(Code::kUnsupported, "spill file format " + std::to_string(Get32(p + 8)) +
                                          " (this epochfs reads format " +
                                          std::to_string(kFileVersion) + ")");
  }
  h->chunk_bytes = Get32(p + 12);
  h->size = Get64(p + 16);
  h->mode = Get32(p + 24);
  h->uid = Get32(p + 28);
  h->gid = Get32(p + 32);
  h->mtime.tv_sec = static_cast<time_t>(Get64(p + 36));
  h->mtime.tv_nsec = Get32(p + 44);
  if (h->chunk_bytes < kBlock || (h->chunk_bytes & (h->chunk_bytes - 1)) != 0) {
    return Corruption("spill file header has a bad chunk size");
  }
  return Status::Ok();
}

void EncodeIndexRecord(uint64_t group, std::span<const uint8_t> bitmap, std::span<uint8_t> out) {
  uint8_t* p = out.data();
  std::memset(p, 0, 16);
  Put32(p, kIndexMagic);
  Put64(p + 8, group);
  std::memcpy(p + 16, bitmap.data(), kIndexBitmapBytes);
  Put64(p + kIndexRecordBytes - 8, Checksum(p, kIndexRecordBytes - 8));
}

Status DecodeIndexRecord(std::span<const uint8_t> in, uint64_t group, std::span<uint8_t> bitmap) {
  if (in.size() < kIndexRecordBytes) return Corruption("index record is truncated");
  const uint8_t* p = in.data();
  if (Get32(p) != kIndexMagic) return Corruption("bad index record magic");
  if (Get64(p + kIndexRecordBytes - 8) != Checksum(p, kIndexRecordBytes - 8)) {
    return Corruption("index record checksum mismatch");
  }
  if (Get64(p + 8) != group) return Corruption("index record of another group");
  std::memcpy(bitmap.data(), p + 16, kIndexBitmapBytes);
  return Status::Ok();
}

void EncodeChunkHeader(const ChunkHeader& h, std::span<uint8_t> block) {
  uint8_t* p = block.data();
  std::memset(p, 0, kBlock);
  Put32(p, kChunkMagic);
  p[4] = kChunkVersion;
  p[5] = static_cast<uint8_t>(h.mode);
  Put64(p + 8, h.chunk);
  Put32(p + 16, h.logical_len);
  Put32(p + 20, h.stored_len);
  Put64(p + 24, h.checksum);
  Put64(p + kChunkHeaderBytes - 8, Checksum(p, kChunkHeaderBytes - 8));
}

ChunkHeaderKind DecodeChunkHeader(std::span<const uint8_t> block, ChunkHeader* h,
                                  const char** why) {
  const uint8_t* p = block.data();
  if (block.size() < kChunkHeaderBytes) {
    *why = "chunk header is truncated";
    return ChunkHeaderKind::kBad;
  }
  // Absent only when everything read is zeros, as a slot never written reads:
  // a zero header followed by other bytes is damage (a torn write, a zeroed
  // sector; found by tests/fuzz/fuzz_chunk) and must not read as a chunk of
  // zeros.
  bool zero = true;
  for (size_t i = 0; i < block.size() && zero; ++i) zero = p[i] == 0;
  if (zero) return ChunkHeaderKind::kAbsent;
  bool header_zero = true;
  for (size_t i = 0; i < kChunkHeaderBytes && header_zero; ++i) header_zero = p[i] == 0;
  if (header_zero) {
    *why = "chunk header is zero but its block is not";
    return ChunkHeaderKind::kBad;
  }
  if (Get32(p) != kChunkMagic || p[4] != kChunkVersion) {
    *why = "bad chunk header magic";
    return ChunkHeaderKind::kBad;
  }
  if (Get64(p + kChunkHeaderBytes - 8) != Checksum(p, kChunkHeaderBytes - 8)) {
    *why = "chunk header checksum mismatch";
    return ChunkHeaderKind::kBad;
  }
  if (p[5] > static_cast<uint8_t>(ZvcMode::kWord16)) {
    *why = "unknown chunk compression mode";
    return ChunkHeaderKind::kBad;
  }
  h->mode = static_cast<ZvcMode>(p[5]);
  h->chunk = Get64(p + 8);
  h->logical_len = Get32(p + 16);
  h->stored_len = Get32(p + 20);
  h->checksum = Get64(p + 24);
  return ChunkHeaderKind::kValid;
}

}  // namespace epochfs::spill
