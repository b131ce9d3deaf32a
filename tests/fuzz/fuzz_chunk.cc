// libFuzzer target: the spill store's file and chunk header decoders, which
// read blocks from the SSD (a torn or corrupted block must be refused, never
// trusted). Checked: a header block that decodes re-encodes to a block that
// decodes to the same header; an all-zero chunk block is "absent"; a bad one
// says why.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "chunk_format.h"
#include "fuzz_check.h"

using namespace epochfs;
using namespace epochfs::spill;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> block(kBlock, 0);
  std::memcpy(block.data(), data, size < kBlock ? size : kBlock);

  FileHeader fh;
  if (DecodeFileHeader(block, &fh).ok()) {
    std::vector<uint8_t> again(kBlock, 0xFF);
    EncodeFileHeader(fh, again);
    FileHeader fh2;
    FUZZ_CHECK(DecodeFileHeader(again, &fh2).ok());
    FUZZ_CHECK(fh2.chunk_bytes == fh.chunk_bytes && fh2.size == fh.size && fh2.mode == fh.mode &&
               fh2.uid == fh.uid && fh2.gid == fh.gid &&
               fh2.mtime.tv_sec == fh.mtime.tv_sec && fh2.mtime.tv_nsec == fh.mtime.tv_nsec);
  }

  ChunkHeader ch;
  const char* why = nullptr;
  switch (DecodeChunkHeader(block, &ch, &why)) {
    case ChunkHeaderKind::kValid: {
      std::vector<uint8_t> again(kBlock, 0xFF);
      EncodeChunkHeader(ch, again);
      ChunkHeader ch2;
      const char* why2 = nullptr;
      FUZZ_CHECK(DecodeChunkHeader(again, &ch2, &why2) == ChunkHeaderKind::kValid);
      FUZZ_CHECK(ch2.mode == ch.mode && ch2.chunk == ch.chunk &&
                 ch2.logical_len == ch.logical_len && ch2.stored_len == ch.stored_len &&
                 ch2.checksum == ch.checksum);
      break;
    }
    case ChunkHeaderKind::kAbsent: {
      for (uint8_t b : block) FUZZ_CHECK(b == 0);
      break;
    }
    case ChunkHeaderKind::kBad:
      FUZZ_CHECK(why != nullptr && why[0] != '\0');
      break;
  }
  return 0;
}
