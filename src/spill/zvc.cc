// Zero-value compression: mode choice, layout, validation. The word loops are in
// zvc_kernels.cc.
#include "epochfs/spill/zvc.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "zvc_kernels.h"

namespace epochfs::spill {
namespace {

size_t WordSize(ZvcMode mode) { return mode == ZvcMode::kWord32 ? 4 : 2; }

size_t BitmapBytes(size_t nwords) { return nwords / 8 + (nwords % 8 != 0); }

// Popcount of a byte range, branch-free and vectorisable (no POPCNT needed).
size_t PopcountBytes(const uint8_t* p, size_t n) {
  size_t total = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x;
    std::memcpy(&x, p + i, 8);
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    total += (x * 0x0101010101010101ull) >> 56;
  }
  for (; i < n; ++i) {
    unsigned b = p[i];
    b = b - ((b >> 1) & 0x55u);
    b = (b & 0x33u) + ((b >> 2) & 0x33u);
    total += (b + (b >> 4)) & 0x0fu;
  }
  return total;
}

// Encodes `in`, which has `nonzero` non-zero words, in word mode `mode` at `out`, which has
// `capacity` writable bytes, at least the encoded size (the word loops may use the rest as
// scratch). Returns the encoded size (the bitmap, the packed words the loops wrote, the tail).
size_t EncodeWords(ZvcMode mode, std::span<const uint8_t> in, size_t nonzero, uint8_t* out,
                   size_t capacity) {
  const auto& k = zvc_internal::ActiveKernels();
  const size_t w = WordSize(mode);
  const size_t n = in.size(), nwords = n / w, tail = n % w;
  const size_t bitmap = BitmapBytes(nwords);
  uint8_t* const packed = out + bitmap;
  uint8_t* const limit = out + capacity;
  uint8_t* end = packed;
  if (nonzero == 0) {
    if (bitmap != 0) std::memset(out, 0, bitmap);
  } else if (mode == ZvcMode::kWord32) {
    end = k.encode32(in.data(), nwords, out, packed, limit);
  } else {
    end = k.encode16(in.data(), nwords, out, packed, limit);
  }
  if (tail != 0) std::memcpy(end, in.data() + nwords * w, tail);
  return static_cast<size_t>(end - out) + tail;
}

// The smallest mode for `in`, its encoded size and its number of non-zero words.
ZvcMode Choose(std::span<const uint8_t> in, size_t* size, size_t* nonzero) {
  const ZvcCounts counts = ZvcCount(in);
  const ZvcChoice c = ZvcChoose(in.size(), counts);
  *size = c.size;
  *nonzero = c.mode == ZvcMode::kWord32   ? counts.nz32
             : c.mode == ZvcMode::kWord16 ? counts.nz16
                                          : 0;
  return c.mode;
}

}  // namespace

const char* ZvcModeName(ZvcMode mode) {
  switch (mode) {
    case ZvcMode::kRaw: return "raw";
    case ZvcMode::kWord32: return "word32";
    case ZvcMode::kWord16: return "word16";
  }
  return "unknown";
}

size_t ZvcMaxEncodedSize(size_t n) { return n; }

size_t ZvcEncodedSize(ZvcMode mode, size_t n, size_t nonzero_words) {
  if (mode == ZvcMode::kRaw) return n;
  const size_t w = WordSize(mode);
  return BitmapBytes(n / w) + nonzero_words * w + n % w;
}

ZvcCounts ZvcCount(std::span<const uint8_t> in) {
  ZvcCounts c;
  zvc_internal::ActiveKernels().count(in.data(), in.size(), &c.nz32, &c.nz16);
  return c;
}

ZvcCounts ZvcCopyCount(std::span<uint8_t> out, std::span<const uint8_t> in) {
  ZvcCounts c;
  zvc_internal::ActiveKernels().copy_count(out.data(), in.data(), in.size(), &c.nz32, &c.nz16);
  return c;
}

ZvcChoice ZvcChoose(size_t n, ZvcCounts counts) {
  const size_t s32 = ZvcEncodedSize(ZvcMode::kWord32, n, counts.nz32);
  const size_t s16 = ZvcEncodedSize(ZvcMode::kWord16, n, counts.nz16);
  if (s32 >= n && s16 >= n) return {ZvcMode::kRaw, n};
  if (s32 <= s16) return {ZvcMode::kWord32, s32};
  return {ZvcMode::kWord16, s16};
}

Result<size_t> ZvcEncodeChosen(std::span<const uint8_t> in, ZvcChoice choice,
                               std::span<uint8_t> out) {
  if (choice.mode != ZvcMode::kWord32 && choice.mode != ZvcMode::kWord16) {
    return InvalidArgument("zvc: ZvcEncodeChosen needs a word mode");
  }
  if (out.size() < ZvcMaxEncodedSize(in.size()) || choice.size > in.size()) {
    return InvalidArgument("zvc: output buffer of " + std::to_string(out.size()) +
                           " bytes for " + std::to_string(in.size()) + " input bytes");
  }
  const size_t w = WordSize(choice.mode);
  const size_t bitmap = BitmapBytes(in.size() / w), tail = in.size() % w;
  if (choice.size < bitmap + tail || (choice.size - bitmap - tail) % w != 0) {
    return Internal("zvc: encoded size " + std::to_string(choice.size) + " cannot be a " +
                    ZvcModeName(choice.mode) + " chunk of " + std::to_string(in.size()) + " bytes");
  }
  // The word loops run even for a count of zero, so that the size check below sees the
  // bytes themselves, not the count.
  const size_t nonzero = std::max<size_t>(1, (choice.size - bitmap - tail) / w);
  const size_t got = EncodeWords(choice.mode, in, nonzero, out.data(), out.size());
  if (got != choice.size) {
    return Internal("zvc: counts given for another chunk (encoded " + std::to_string(got) +
                    " bytes, expected " + std::to_string(choice.size) + ")");
  }
  return got;
}

ZvcMode ZvcEncode(std::span<const uint8_t> in, std::vector<uint8_t>* out) {
  size_t size = 0, nonzero = 0;
  const ZvcMode mode = Choose(in, &size, &nonzero);
  if (mode == ZvcMode::kRaw) {
    out->resize(size);
    if (size != 0) std::memcpy(out->data(), in.data(), size);
  } else {
    // 32 bytes of scratch keep the vector loops on their fast path to the end.
    constexpr size_t kScratch = 32;
    out->resize(size + kScratch);
    EncodeWords(mode, in, nonzero, out->data(), size + kScratch);
    out->resize(size);
  }
  return mode;
}

Status ZvcEncodeInto(std::span<const uint8_t> in, std::span<uint8_t> out, ZvcMode* mode,
                     size_t* size) {
  if (out.size() < ZvcMaxEncodedSize(in.size())) {
    return InvalidArgument("zvc: output buffer of " + std::to_string(out.size()) +
                           " bytes for " + std::to_string(in.size()) + " input bytes");
  }
  size_t nonzero = 0;
  *mode = Choose(in, size, &nonzero);
  if (*mode == ZvcMode::kRaw) {
    if (*size != 0) std::memcpy(out.data(), in.data(), *size);
  } else {
    EncodeWords(*mode, in, nonzero, out.data(), out.size());
  }
  return Status::Ok();
}

Status ZvcDecode(ZvcMode mode, std::span<const uint8_t> enc, std::span<uint8_t> out) {
  const size_t n = out.size();
  if (mode == ZvcMode::kRaw) {
    if (enc.size() != n) {
      return Corruption("zvc: raw chunk of " + std::to_string(enc.size()) + " bytes, expected " +
                        std::to_string(n));
    }
    if (n != 0) std::memcpy(out.data(), enc.data(), n);
    return Status::Ok();
  }
  if (mode != ZvcMode::kWord32 && mode != ZvcMode::kWord16) {
    return InvalidArgument("zvc: unknown mode " + std::to_string(static_cast<int>(mode)));
  }
  const size_t w = WordSize(mode);
  const size_t nwords = n / w, tail = n % w, bitmap = BitmapBytes(nwords);
  if (enc.size() < bitmap + tail) {
    return Corruption("zvc: " + std::string(ZvcModeName(mode)) + " chunk of " +
                      std::to_string(enc.size()) + " bytes is shorter than its bitmap and tail");
  }
  const uint8_t* const p = enc.data();
  if (nwords % 8 != 0 && (p[bitmap - 1] >> (nwords % 8)) != 0) {
    return Corruption("zvc: bits set past the last word");
  }
  const size_t nonzero = PopcountBytes(p, bitmap);
  if (enc.size() != bitmap + nonzero * w + tail) {
    return Corruption("zvc: " + std::string(ZvcModeName(mode)) + " chunk of " +
                      std::to_string(enc.size()) + " bytes, its bitmap needs " +
                      std::to_string(bitmap + nonzero * w + tail));
  }
  const auto& k = zvc_internal::ActiveKernels();
  const uint8_t* const packed = p + bitmap;
  const uint8_t* const limit = p + enc.size();
  if (nonzero == 0) {
    if (nwords != 0) std::memset(out.data(), 0, nwords * w);
  } else if (mode == ZvcMode::kWord32) {
    k.decode32(p, packed, limit, nwords, out.data());
  } else {
    k.decode16(p, packed, limit, nwords, out.data());
  }
  if (tail != 0) std::memcpy(out.data() + nwords * w, limit - tail, tail);
  return Status::Ok();
}

const char* ZvcKernelName() { return zvc_internal::ActiveKernels().name; }

}  // namespace epochfs::spill
