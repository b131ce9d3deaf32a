// The header block and the index blocks of a spill backing file
// (chunk_format.h), read and written with O_DIRECT pread / pwrite on the
// file's descriptor (synchronous: the callers are file operations, not the
// I/O thread).
//
// Thread safety: each call uses its own aligned buffer; concurrent calls on
// one descriptor are the caller's to order.
#pragma once

#include <cstdint>
#include <span>

#include "chunk_format.h"
#include "epochfs/common/status.h"

namespace epochfs::spill {

// Writes the header block: `h`, and group 0's index record from `bitmap0`
// (kIndexBitmapBytes; empty: no chunk written).
Status WriteHeaderBlock(int fd, const FileHeader& h, std::span<const uint8_t> bitmap0);
// Reads the header block. *empty when the file has no header yet (shorter
// than a block: created, then a crash before the header was written).
// bitmap0 (kIndexBitmapBytes, optional): group 0's bitmap, and *index_ok
// whether its record is valid.
Status ReadHeaderBlock(int fd, FileHeader* h, bool* empty, std::span<uint8_t> bitmap0 = {},
                       bool* index_ok = nullptr);
// The index block of group `group` >= 1.
Status WriteIndexBlock(int fd, uint64_t group, uint32_t chunk_bytes,
                       std::span<const uint8_t> bitmap);
// Corruption when the block is past the file's end, zeros or not a valid
// record of `group`.
Status ReadIndexBlock(int fd, uint64_t group, uint32_t chunk_bytes, std::span<uint8_t> bitmap);

}  // namespace epochfs::spill
