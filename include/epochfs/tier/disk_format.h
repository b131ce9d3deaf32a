// The disk tier's object files: one file per cached object (a whole lower
// file, or a block of a big one), laid out as
//
//   header   "EPFSDTO2", u32 header_len, u32 block_bytes, u64 offset,
//            u64 length, u64 size, i64 mtime_ns, i64 ctime_ns, u64 ino,
//            u64 data_len, u32 rel_len, rel, u64 XXH3 of the header's bytes
//            before it                                        (84 + rel bytes)
//   data     data_len bytes, the lower file's bytes [offset, offset + data_len)
//   sums     one u64 XXH3 per kBlockBytes block of data (the last may be short)
//
// All integers little-endian. The header names the copy (LowerKey: path,
// range, the version it copied: size, mtime, ctime, inode number as
// store::VersionRule gives them), so a scan of the directory rebuilds the
// index; the sums catch a torn or flipped write: a block that does not
// verify is never served. Per object the format costs 84 + path bytes and
// 8 bytes per 64 KiB (0.012 %). Format 1 ("EPFSDTO1", no ctime nor inode)
// is not read: a scan removes such files.
//
// Pure functions; no I/O. Thread safety: none needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/store/second_tier.h"

namespace epochfs::tier {

inline constexpr uint32_t kBlockBytes = 64 * 1024;
// The sums are those of the object's checksum (store/object.h): a read that
// verified every block has the object's checksum from them.
static_assert(kBlockBytes == store::kChecksumBlockBytes);
inline constexpr size_t kHeaderFixed = 76;  // before the path; + path + 8 (its checksum)

size_t HeaderBytes(const store::LowerKey& key);
size_t SumsBytes(uint64_t data_len);
std::vector<uint8_t> EncodeHeader(const store::LowerKey& key, uint64_t data_len);
// Reads a header from [p, p + n): Corruption when it is not one (bad magic,
// lengths or checksum). *header_len is its length.
Status DecodeHeader(const uint8_t* p, size_t n, store::LowerKey* key, uint64_t* data_len,
                    size_t* header_len);
// The XXH3 of each block of `data`, encoded (SumsBytes(n) bytes; BlockSums).
std::vector<uint8_t> EncodeSums(const char* data, size_t n);
// The number of blocks of `data` that do not match `sums` (0: verified).
uint64_t BadBlocks(const char* data, size_t n, const uint8_t* sums);

// Little-endian helpers (shared with the journal).
void PutU32(std::vector<uint8_t>* out, uint32_t v);
void PutU64(std::vector<uint8_t>* out, uint64_t v);
uint32_t GetU32(const uint8_t* p);
uint64_t GetU64(const uint8_t* p);

}  // namespace epochfs::tier
