// libFuzzer target: the zero-value codec of spill chunks.
// Checked: (1) any bytes decode without reading or writing out of bounds
// (ASan) and either fail cleanly or fill exactly the output; (2) the input,
// encoded, decodes back to itself byte for byte, and the encoding is never
// longer than ZvcMaxEncodedSize.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "epochfs/spill/zvc.h"
#include "fuzz_check.h"

using namespace epochfs;
using namespace epochfs::spill;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  // Hostile decode: mode from byte 0, output length from bytes 1-2.
  const auto mode = static_cast<ZvcMode>(data[0] % 4);
  const size_t out_len = (size_t{data[1]} << 8 | data[2]) % 65537;
  std::span<const uint8_t> enc(data + 3, size - 3);
  std::vector<uint8_t> out(out_len, 0xAB);
  (void)ZvcDecode(mode, enc, out);

  // Round trip of the whole input.
  std::span<const uint8_t> in(data, size);
  std::vector<uint8_t> coded;
  const ZvcMode used = ZvcEncode(in, &coded);
  FUZZ_CHECK(coded.size() <= ZvcMaxEncodedSize(size));
  std::vector<uint8_t> back(size, 0x5A);
  Status s = ZvcDecode(used, coded, back);
  FUZZ_CHECK(s.ok());
  FUZZ_CHECK(std::memcmp(back.data(), data, size) == 0);
  // The allocation-free encoder agrees.
  std::vector<uint8_t> buf(ZvcMaxEncodedSize(size));
  ZvcMode m2;
  size_t n2 = 0;
  FUZZ_CHECK(ZvcEncodeInto(in, buf, &m2, &n2).ok());
  FUZZ_CHECK(m2 == used && n2 == coded.size() && std::memcmp(buf.data(), coded.data(), n2) == 0);
  return 0;
}
