// Zero-value compression (ZVC) of one chunk of a spill file (docs/spill.md, seed 002).
//
// Activations after a ReLU and many gradients are mostly zero words. ZVC stores a chunk as
//
//   [bitmap: ceil(W/8) bytes][packed non-zero words: popcount(bitmap) * w bytes][tail: n % w bytes]
//
// where w is the word size (4 bytes in kWord32, 2 bytes in kWord16), W = n / w the number of
// whole words, bit i of the bitmap (byte i / 8, bit i % 8, least significant first) is set
// when word i is not all-zero bits, the packed words are the non-zero words in order, copied
// byte for byte (no byte-order conversion: the codec never interprets a word), and the tail is
// the last n % w input bytes verbatim. Unused high bits of the last bitmap byte are zero. kRaw
// is the chunk verbatim. The encoded form carries neither its length, its mode, nor a checksum:
// the caller stores the mode and the original length beside it and checksums what it writes.
//
// Chunking is the caller's job: encode fixed-size chunks (64-256 KiB) independently, so that a
// random read decodes one chunk, never the file. The codec holds no state across chunks.
//
// Thread safety: pure functions of their arguments; call them from any thread.
// Errors: ZvcDecode returns Corruption when `enc` cannot be what ZvcEncode produced for an
// output of out.size() bytes (wrong length for the bitmap's popcount, stray bits past the last
// word), InvalidArgument for an unknown mode. It never reads outside `enc` nor writes outside
// `out`, whatever the bytes. (A set bit whose packed word is zero is not canonical but decodes
// to exactly those bytes; it is accepted.)
// Speed: on x86-64 with SSSE3 and POPCNT (checked once at run time) the word loops use
// 16-byte shuffles; elsewhere a portable branch-free loop. docs/spill.md has the figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs::spill {

enum class ZvcMode : uint8_t { kRaw = 0, kWord32 = 1, kWord16 = 2 };

// "raw", "word32", "word16" (or "unknown").
const char* ZvcModeName(ZvcMode mode);

// Upper bound of ZvcEncode's output for n input bytes (raw never exceeds n).
size_t ZvcMaxEncodedSize(size_t n);

// The exact encoded size of n input bytes holding `nonzero_words` non-zero words in `mode`.
// REQUIRES: nonzero_words <= n / (word size of mode).
size_t ZvcEncodedSize(ZvcMode mode, size_t n, size_t nonzero_words);

// Encodes one chunk `in` (any length, including odd lengths and 0) into `out` (overwritten,
// resized to the encoded length). Tries 32-bit-word mode and 16-bit-word mode and keeps the
// smallest (32-bit on a tie); stores raw when compression does not pay (encoded >= n).
// Returns the mode used. One read-only counting pass plus one encoding pass.
ZvcMode ZvcEncode(std::span<const uint8_t> in, std::vector<uint8_t>* out);

// The same into a caller's buffer (e.g. an aligned O_DIRECT buffer), without allocating.
// Sets *mode and *size (the encoded length, at the front of `out`); the bytes of `out` past
// *size are unspecified (the word loops use them as scratch).
// InvalidArgument when out.size() < ZvcMaxEncodedSize(in.size()); `in` and `out` must not overlap.
Status ZvcEncodeInto(std::span<const uint8_t> in, std::span<uint8_t> out, ZvcMode* mode,
                     size_t* size);

// The two counts the mode choice needs: non-zero 32-bit words among the n / 4 whole words of
// a chunk, and non-zero 16-bit words among its n / 2 whole 16-bit words.
struct ZvcCounts {
  size_t nz32 = 0;
  size_t nz16 = 0;
};

// The counting pass alone (read-only).
ZvcCounts ZvcCount(std::span<const uint8_t> in);

// Copies `in` to `out` (out.size() >= in.size(), no overlap) and counts `in` in the same
// pass: a writer that copies a chunk anyway gets its counts for the price of the copy. Counts
// of consecutive pieces add up to the counts of the whole as long as every piece but the last
// starts and ends on a multiple of 4 bytes.
ZvcCounts ZvcCopyCount(std::span<uint8_t> out, std::span<const uint8_t> in);

// The mode ZvcEncode would choose for n bytes with these counts, and its encoded size.
struct ZvcChoice {
  ZvcMode mode = ZvcMode::kRaw;
  size_t size = 0;  // encoded bytes
};
ZvcChoice ZvcChoose(size_t n, ZvcCounts counts);

// Encodes `in` in a word mode chosen by ZvcChoose from in's counts, into `out` (at least
// ZvcMaxEncodedSize(in.size()) bytes; the bytes past choice.size are unspecified), with no
// counting pass. Returns the encoded size (== choice.size), or Internal when the encoding came
// out at another size (the counts were not in's; its bytes must not be used).
// REQUIRES: choice comes from ZvcChoose with in's exact counts (ZvcCount(in), or the sum of
// ZvcCopyCount over its pieces) and is a word mode; in and out do not overlap. Counts that
// understate the non-zero words can make the word loops write up to in.size() / 16 + 1 bytes
// past a buffer of in.size() bytes: the check above is a safety net, not a licence.
Result<size_t> ZvcEncodeChosen(std::span<const uint8_t> in, ZvcChoice choice,
                               std::span<uint8_t> out);

// Decodes `enc` (produced by ZvcEncode with `mode`) into `out`, whose size is the original
// length. Malformed input is Corruption (or InvalidArgument for an unknown mode), never a
// crash or an out-of-bounds access; `out` is unspecified after an error.
Status ZvcDecode(ZvcMode mode, std::span<const uint8_t> enc, std::span<uint8_t> out);

// Which word loops this process uses: "ssse3" or "portable" (for benchmarks and logs).
const char* ZvcKernelName();

}  // namespace epochfs::spill
