// The word loops behind ZvcEncode/ZvcDecode (include/epochfs/spill/zvc.h), one set per
// instruction set. Internal to src/spill; the unit test runs every set that this CPU supports
// against the same properties.
//
// Contracts shared by every set (w = word size, W = nwords):
// - count: *nz32 = number of non-zero 4-byte words among the n / 4 whole words of `in`,
//   *nz16 = the same for the n / 2 whole 2-byte words.
// - copy_count: copies n bytes from `in` to `out` (which must not overlap) and counts them as
//   `count` does, in one pass over `in`.
// - encode: writes the ceil(W / 8) bitmap bytes at `bitmap` (unused high bits zero) and the
//   non-zero words from `packed` on; returns the end of the packed words. It may write scratch
//   bytes between that end and `limit` (exclusive), never at or past `limit`.
//   REQUIRES: limit >= packed + (number of non-zero words) * w.
// - decode: writes W words to `out`. REQUIRES: the bitmap's popcount (of its first W bits) words
//   are readable from `packed`; it may read, and ignore, bytes between them and `limit`
//   (exclusive), never at or past `limit`.
// Thread safety: the functions are pure; UseKernels is for tests and not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace epochfs::spill::zvc_internal {

struct Kernels {
  const char* name;
  void (*count)(const uint8_t* in, size_t n, size_t* nz32, size_t* nz16);
  void (*copy_count)(uint8_t* out, const uint8_t* in, size_t n, size_t* nz32, size_t* nz16);
  uint8_t* (*encode32)(const uint8_t* in, size_t nwords, uint8_t* bitmap, uint8_t* packed,
                       uint8_t* limit);
  uint8_t* (*encode16)(const uint8_t* in, size_t nwords, uint8_t* bitmap, uint8_t* packed,
                       uint8_t* limit);
  void (*decode32)(const uint8_t* bitmap, const uint8_t* packed, const uint8_t* limit,
                   size_t nwords, uint8_t* out);
  void (*decode16)(const uint8_t* bitmap, const uint8_t* packed, const uint8_t* limit,
                   size_t nwords, uint8_t* out);
};

// Plain C++ (compilers turn the counting loop into vector code; the rest is branch-free).
const Kernels& PortableKernels();
// SSE2/SSSE3 shuffles and POPCNT; nullptr when this CPU or build target lacks them.
const Kernels* Ssse3Kernels();
// The set ZvcEncode/ZvcDecode use: the best supported one, or `k` after UseKernels(k)
// (nullptr restores the automatic choice).
const Kernels& ActiveKernels();
void UseKernels(const Kernels* k);

}  // namespace epochfs::spill::zvc_internal
