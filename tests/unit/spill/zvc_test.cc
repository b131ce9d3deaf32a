// Properties of the zero-value compression codec (include/epochfs/spill/zvc.h), checked for
// every word-loop implementation this CPU runs (portable, ssse3) against a plain reference
// encoder/decoder written here from the format description: exact encoded bytes, the chosen
// mode is the smallest, round trips, and a decoder that rejects (or decodes exactly as the
// reference does) every malformed input without touching memory outside its spans (the
// 'unit' suite also runs under ASan/UBSan, and every span here covers an exact-size heap block).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "epochfs/spill/zvc.h"
#include "zvc_kernels.h"

namespace epochfs::spill {
namespace {

using Bytes = std::vector<uint8_t>;

size_t WordSize(ZvcMode m) { return m == ZvcMode::kWord32 ? 4 : 2; }

// ---- the reference codec: slow, obvious, bounds-checked ------------------------------------

Bytes RefEncode(ZvcMode mode, const Bytes& in) {
  if (mode == ZvcMode::kRaw) return in;
  const size_t w = WordSize(mode), nw = in.size() / w;
  Bytes bitmap((nw + 7) / 8, 0), packed;
  for (size_t i = 0; i < nw; ++i) {
    bool nz = false;
    for (size_t k = 0; k < w; ++k) nz |= in.at(i * w + k) != 0;
    if (!nz) continue;
    bitmap.at(i / 8) |= static_cast<uint8_t>(1u << (i % 8));
    for (size_t k = 0; k < w; ++k) packed.push_back(in.at(i * w + k));
  }
  Bytes out = bitmap;
  out.insert(out.end(), packed.begin(), packed.end());
  out.insert(out.end(), in.begin() + static_cast<ptrdiff_t>(nw * w), in.end());
  return out;
}

// nullopt when `enc` is not a valid encoding of n bytes in `mode` (0 raw, 1 word32, 2 word16).
std::optional<Bytes> RefDecode(int mode, const Bytes& enc, size_t n) {
  if (mode == 0) return enc.size() == n ? std::optional<Bytes>(enc) : std::nullopt;
  if (mode != 1 && mode != 2) return std::nullopt;
  const size_t w = mode == 1 ? 4 : 2, nw = n / w, tail = n % w, bm = (nw + 7) / 8;
  if (enc.size() < bm + tail) return std::nullopt;
  for (size_t bit = nw; bit < bm * 8; ++bit) {
    if ((enc.at(bit / 8) >> (bit % 8)) & 1) return std::nullopt;
  }
  size_t set = 0;
  for (size_t i = 0; i < nw; ++i) set += (enc.at(i / 8) >> (i % 8)) & 1;
  if (enc.size() != bm + set * w + tail) return std::nullopt;
  Bytes out(n, 0);
  size_t src = bm;
  for (size_t i = 0; i < nw; ++i) {
    if (!((enc.at(i / 8) >> (i % 8)) & 1)) continue;
    for (size_t k = 0; k < w; ++k) out.at(i * w + k) = enc.at(src++);
  }
  for (size_t k = 0; k < tail; ++k) out.at(nw * w + k) = enc.at(src++);
  return out;
}

// The mode the contract asks for: smallest of word32/word16 (word32 on a tie), raw when that
// is not smaller than the input.
ZvcMode RefMode(const Bytes& in) {
  const size_t s32 = RefEncode(ZvcMode::kWord32, in).size();
  const size_t s16 = RefEncode(ZvcMode::kWord16, in).size();
  if (std::min(s32, s16) >= in.size()) return ZvcMode::kRaw;
  return s32 <= s16 ? ZvcMode::kWord32 : ZvcMode::kWord16;
}

// ---- data -------------------------------------------------------------------------------

// n bytes in words of `g` bytes, each word zero with probability p, otherwise random with at
// least one non-zero byte (zeros at word granularity, like ReLU outputs); tail bytes random.
Bytes Sparse(std::mt19937_64& rng, size_t n, double p, size_t g) {
  Bytes b(n);
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(rng());
  for (size_t i = 0; i + g <= n; i += g) {
    if (u(rng) < p) {
      std::fill_n(b.begin() + static_cast<ptrdiff_t>(i), g, 0);
    } else if (std::all_of(b.begin() + static_cast<ptrdiff_t>(i),
                           b.begin() + static_cast<ptrdiff_t>(i + g),
                           [](uint8_t x) { return x == 0; })) {
      b[i + rng() % g] = static_cast<uint8_t>(1 + rng() % 255);
    }
  }
  return b;
}

template <class T>
Bytes FromWords(const std::vector<T>& words) {
  Bytes b(words.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), words.data(), b.size());
  return b;
}

// ---- one kernel set per test instance ---------------------------------------------------

class Zvc : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const zvc_internal::Kernels* k = GetParam() == "portable" ? &zvc_internal::PortableKernels()
                                                              : zvc_internal::Ssse3Kernels();
    if (k == nullptr) GTEST_SKIP() << GetParam() << " is not supported on this CPU";
    zvc_internal::UseKernels(k);
    ASSERT_STREQ(ZvcKernelName(), GetParam().c_str());
  }
  void TearDown() override { zvc_internal::UseKernels(nullptr); }

  // Encodes with both entry points, checks the exact bytes, the mode, and the round trip.
  // Returns the mode.
  ZvcMode Check(const Bytes& in, const std::string& what) {
    SCOPED_TRACE(what + " n=" + std::to_string(in.size()));
    Bytes enc{0xAA, 0xBB};  // overwritten
    const ZvcMode mode = ZvcEncode(in, &enc);
    EXPECT_EQ(mode, RefMode(in));
    EXPECT_EQ(enc, RefEncode(mode, in));
    EXPECT_LE(enc.size(), ZvcMaxEncodedSize(in.size()));
    if (mode != ZvcMode::kRaw) {
      EXPECT_LT(enc.size(), in.size());
    }

    // Into a buffer of exactly ZvcMaxEncodedSize bytes (the loops' scratch must stay inside).
    Bytes buf(ZvcMaxEncodedSize(in.size()));
    ZvcMode mode2 = ZvcMode::kRaw;
    size_t size2 = 0;
    EXPECT_TRUE(ZvcEncodeInto(in, buf, &mode2, &size2).ok());
    EXPECT_EQ(mode2, mode);
    EXPECT_EQ(Bytes(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(size2)), enc);

    Bytes exact(enc);  // exact-size heap block: ASan sees any over-read
    Bytes out(in.size(), 0x5C);
    const Status s = ZvcDecode(mode, exact, out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(out, in);
    return mode;
  }
};

TEST_P(Zvc, RoundTripRandomData) {
  std::mt19937_64 rng(1);
  const double fractions[] = {0.0, 0.3, 0.5, 0.8, 0.95, 0.99, 1.0};
  for (int iter = 0; iter < 400; ++iter) {
    const size_t n = iter < 200 ? rng() % 700 : rng() % 70000;
    const double p = fractions[rng() % 7];
    const size_t g = size_t{1} << (rng() % 4);  // zeros at 1, 2, 4 or 8-byte granularity
    Check(Sparse(rng, n, p, g), "p=" + std::to_string(p) + " g=" + std::to_string(g));
  }
}

TEST_P(Zvc, AllZeros) {
  for (size_t n : {1, 2, 3, 4, 5, 7, 8, 31, 32, 33, 63, 64, 65, 4096, 65536, 65539, 262144}) {
    const Bytes in(n, 0);
    const ZvcMode mode = Check(in, "zeros");
    // Only a bitmap of zeros and the tail remain. With no tail word32 wins (its bitmap is half
    // as long); a 2- or 3-byte word32 tail can make word16 smaller.
    const size_t s32 = (n / 4 + 7) / 8 + n % 4, s16 = (n / 2 + 7) / 8 + n % 2;
    Bytes enc;
    (void)ZvcEncode(in, &enc);
    EXPECT_EQ(enc.size(), std::min(std::min(s32, s16), n)) << n;
    if (n % 4 == 0 && n >= 8) {
      EXPECT_EQ(mode, ZvcMode::kWord32) << n;
    }
  }
}

TEST_P(Zvc, NoZerosIsRaw) {
  std::mt19937_64 rng(2);
  for (size_t n : {0, 1, 2, 3, 4, 5, 15, 16, 17, 100, 4096, 65536, 65537}) {
    const Bytes in = Sparse(rng, n, 0.0, 2);  // no zero 16-bit (so no zero 32-bit) word
    EXPECT_EQ(Check(in, "no zeros"), ZvcMode::kRaw) << n;
  }
  Bytes enc{1, 2, 3};
  EXPECT_EQ(ZvcEncode({}, &enc), ZvcMode::kRaw);
  EXPECT_TRUE(enc.empty());
}

TEST_P(Zvc, RawWhenCompressionDoesNotPay) {
  // 18 bytes = 9 16-bit words, one of them (the last) zero: word16 is 2 + 8*2 = 18 bytes,
  // word32 (4 words + 2 tail bytes, none zero) 1 + 16 + 2 = 19: equal to n is not a gain.
  Bytes in(18, 0x11);
  in[16] = in[17] = 0;
  EXPECT_EQ(RefEncode(ZvcMode::kWord16, in).size(), 18u);
  EXPECT_EQ(Check(in, "break-even"), ZvcMode::kRaw);
  // One more zero word and word16 pays.
  in[0] = in[1] = 0;
  EXPECT_EQ(Check(in, "one byte gained"), ZvcMode::kWord16);
}

TEST_P(Zvc, ChoosesTheSmallerMode) {
  std::mt19937_64 rng(3);
  // Half the 32-bit words zero, the others with both 16-bit halves non-zero: word32 wins.
  Bytes nz32 = Sparse(rng, 4096, 0.5, 4);
  for (size_t i = 0; i < nz32.size(); i += 4) {
    if (nz32[i] | nz32[i + 1] | nz32[i + 2] | nz32[i + 3]) nz32[i] = nz32[i + 2] = 0x42;
  }
  EXPECT_EQ(Check(nz32, "word32 data"), ZvcMode::kWord32);
  // f16/bf16-like data: 80% zero 16-bit words, independent: word16 wins.
  EXPECT_EQ(Check(Sparse(rng, 4096, 0.8, 2), "word16 data"), ZvcMode::kWord16);
  // Ties (equal word32 and word16 sizes) go to word32; found by search over small inputs.
  int ties = 0;
  for (int iter = 0; iter < 20000 && ties < 20; ++iter) {
    const Bytes in = Sparse(rng, 1 + rng() % 80, 0.6, 2);
    const size_t s32 = RefEncode(ZvcMode::kWord32, in).size();
    if (s32 == RefEncode(ZvcMode::kWord16, in).size() && s32 < in.size()) {
      EXPECT_EQ(Check(in, "tie"), ZvcMode::kWord32);
      ++ties;
    }
  }
  EXPECT_GT(ties, 0);
}

TEST_P(Zvc, FloatPatternsKeepTheirBits) {
  std::mt19937_64 rng(4);
  // f32: NaNs (quiet, signalling, negative), denormals, -0.0 (0x80000000 is not a zero word),
  // infinities, the largest/smallest normals.
  const uint32_t f32[] = {0x7fc00000, 0x7f800001, 0xffc00000, 0x7fffffff, 0x00000001,
                          0x007fffff, 0x807fffff, 0x80000000, 0x7f800000, 0xff800000,
                          0x00800000, 0x7f7fffff, 0x3f800000};
  // f16 and bf16: NaNs, denormals, -0, infinities.
  const uint16_t f16[] = {0x7e00, 0x7c01, 0xfe00, 0x0001, 0x03ff, 0x8001, 0x8000,
                          0x7c00, 0xfc00, 0x7fc0, 0x7f81, 0xffc0, 0x007f, 0x807f, 0x7f80};
  for (double p : {0.0, 0.5, 0.8, 0.95}) {
    for (size_t n : {1, 7, 8, 9, 1000, 16384}) {
      std::vector<uint32_t> a(n);
      std::vector<uint16_t> h(n);
      for (size_t i = 0; i < n; ++i) {
        const bool zero = std::uniform_real_distribution<double>(0, 1)(rng) < p;
        a[i] = zero ? 0 : f32[rng() % std::size(f32)];
        h[i] = zero ? 0 : f16[rng() % std::size(f16)];
      }
      const Bytes fa = FromWords(a), fh = FromWords(h);
      Check(fa, "f32 p=" + std::to_string(p));
      Check(fh, "f16/bf16 p=" + std::to_string(p));
      // Odd lengths cut through the last value.
      Check(Bytes(fa.begin(), fa.end() - 1), "f32 cut");
      Check(Bytes(fh.begin(), fh.end() - 1), "f16 cut");
    }
  }
  // f32 -0.0 everywhere: no zero 32-bit word, but every low 16-bit half is zero, so word16
  // keeps the sign halves and -0.0 comes back as -0.0.
  EXPECT_EQ(Check(FromWords(std::vector<uint32_t>(1024, 0x80000000)), "-0.0"), ZvcMode::kWord16);
  // f32 1.0f (0x3f800000) likewise; 0x3f800001 has no zero half at all.
  EXPECT_EQ(Check(FromWords(std::vector<uint32_t>(1024, 0x3f800000)), "1.0"), ZvcMode::kWord16);
  EXPECT_EQ(Check(FromWords(std::vector<uint32_t>(1024, 0x3f800001)), "1.0+ulp"), ZvcMode::kRaw);
}

TEST_P(Zvc, EveryLengthAroundWordsAndChunkSizes) {
  std::mt19937_64 rng(5);
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 300; ++n) lengths.push_back(n);
  // Every residue of the 32-byte bitmap group around the smaller chunk sizes, a few around
  // the larger ones (the reference codec is slow).
  for (size_t base : {4096, 65536}) {
    for (size_t n = base - 40; n <= base + 40; ++n) lengths.push_back(n);
  }
  for (size_t base : {131072, 262144}) {
    for (size_t n = base - 3; n <= base + 3; ++n) lengths.push_back(n);
  }
  for (size_t n : lengths) {
    Check(Bytes(n, 0), "zeros");
    Check(Sparse(rng, n, 0.0, 1), "dense");
    Check(Sparse(rng, n, 0.5, 4), "half word32");
    Check(Sparse(rng, n, 0.9, 2), "sparse word16");
    // Non-zero only in the last bytes: the tail and the last bitmap bits.
    Bytes last(n, 0);
    for (size_t k = 0; k < std::min<size_t>(n, 3); ++k) {
      last[n - 1 - k] = static_cast<uint8_t>(k + 1);
    }
    Check(last, "last bytes");
  }
}

TEST_P(Zvc, EncodeIntoChecksItsBuffer) {
  const Bytes in(100, 0);
  Bytes small(99);
  ZvcMode mode = ZvcMode::kRaw;
  size_t size = 0;
  EXPECT_EQ(ZvcEncodeInto(in, small, &mode, &size).code(), Code::kInvalidArgument);
  Bytes big(200, 0xEE);
  ASSERT_TRUE(ZvcEncodeInto(in, big, &mode, &size).ok());
  EXPECT_EQ(mode, ZvcMode::kWord32);
  EXPECT_EQ(Bytes(big.begin(), big.begin() + static_cast<ptrdiff_t>(size)),
            RefEncode(ZvcMode::kWord32, in));
}

TEST_P(Zvc, RejectsWrongSizesAndStrayBits) {
  std::mt19937_64 rng(6);
  const Bytes in = Sparse(rng, 1003, 0.7, 4);
  Bytes enc;
  const ZvcMode mode = ZvcEncode(in, &enc);
  ASSERT_EQ(mode, ZvcMode::kWord32);
  Bytes out(in.size());
  // Every truncation, and one byte more.
  for (size_t len = 0; len < enc.size(); ++len) {
    const Bytes cut(enc.begin(), enc.begin() + static_cast<ptrdiff_t>(len));
    EXPECT_EQ(ZvcDecode(mode, cut, out).code(), Code::kCorruption) << len;
  }
  Bytes longer = enc;
  longer.push_back(0);
  EXPECT_EQ(ZvcDecode(mode, longer, out).code(), Code::kCorruption);
  // Flipping one bitmap bit changes the popcount, so the length no longer matches.
  for (size_t bit = 0; bit < 250; ++bit) {
    Bytes flipped = enc;
    flipped[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_EQ(ZvcDecode(mode, flipped, out).code(), Code::kCorruption) << bit;
  }
  // 1003 bytes = 250 words: bits 250..255 of the last bitmap byte must be clear, even when the
  // length would match.
  Bytes stray = enc;
  size_t set = 0;
  while (!((stray[set / 8] >> (set % 8)) & 1)) ++set;
  stray[set / 8] ^= static_cast<uint8_t>(1u << (set % 8));
  stray[31] |= 0x80;  // bit 255: same popcount, same length
  EXPECT_EQ(ZvcDecode(mode, stray, out).code(), Code::kCorruption);
  // Wrong output size for the same bytes (the format has no length: n + 4 here would decode,
  // as 250 words, a zero word and the same tail); a raw chunk of the wrong size; unknown modes.
  for (size_t wrong : {in.size() - 1, in.size() + 1, in.size() + 2, in.size() + 32}) {
    Bytes out2(wrong);
    EXPECT_EQ(ZvcDecode(mode, enc, out2).code(), Code::kCorruption) << wrong;
  }
  EXPECT_EQ(ZvcDecode(ZvcMode::kRaw, enc, out).code(), Code::kCorruption);
  EXPECT_EQ(ZvcDecode(static_cast<ZvcMode>(3), enc, out).code(), Code::kInvalidArgument);
  EXPECT_EQ(ZvcDecode(static_cast<ZvcMode>(255), enc, out).code(), Code::kInvalidArgument);
  // An empty chunk decodes from nothing in every mode, and from nothing else.
  Bytes none;
  for (ZvcMode m : {ZvcMode::kRaw, ZvcMode::kWord32, ZvcMode::kWord16}) {
    EXPECT_TRUE(ZvcDecode(m, none, std::span<uint8_t>()).ok());
    EXPECT_EQ(ZvcDecode(m, Bytes{0}, std::span<uint8_t>()).code(), Code::kCorruption);
  }
}

// The decoder on hostile bytes: random buffers, and valid encodings that were truncated,
// extended or had bytes changed. Each result is either an error or exactly the reference
// decoder's bytes; the exact-size buffers let ASan catch any access outside them.
TEST_P(Zvc, DecoderFuzz) {
  std::mt19937_64 rng(7);
  size_t accepted = 0, rejected = 0;
  for (int iter = 0; iter < 30000; ++iter) {
    const size_t n = iter % 10 == 0 ? rng() % 5000 : rng() % 300;
    const int mode = static_cast<int>(rng() % 8 == 0 ? rng() % 256 : rng() % 3);
    Bytes enc;
    switch (rng() % 3) {
      case 0: {  // random bytes of a random length near the plausible one
        enc.resize(rng() % (n + 64));
        const unsigned density = static_cast<unsigned>(rng() % 4);
        for (auto& b : enc) b = static_cast<uint8_t>(rng() % 4 < density ? rng() : 0);
        break;
      }
      default: {  // a valid encoding of random data, then damaged
        const Bytes in = Sparse(rng, n, 0.1 * static_cast<double>(rng() % 11), 1 + rng() % 4);
        (void)ZvcEncode(in, &enc);
        switch (rng() % 4) {
          case 0: enc.resize(enc.empty() ? 0 : rng() % enc.size()); break;
          case 1: enc.resize(enc.size() + 1 + rng() % 40, static_cast<uint8_t>(rng())); break;
          case 2:
            for (int k = 0; k < 3 && !enc.empty(); ++k) {
              enc[rng() % enc.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
            }
            break;
          default:  // swap the first two (bitmap) bytes: often the same length, other words
            if (enc.size() >= 2) std::swap(enc[0], enc[1]);
            break;
        }
      }
    }
    Bytes out(n, 0x5C);
    const Status s = ZvcDecode(static_cast<ZvcMode>(mode), enc, out);
    const std::optional<Bytes> want = RefDecode(mode, enc, n);
    ASSERT_EQ(s.ok(), want.has_value()) << "iter " << iter << " mode " << mode << " n " << n
                                        << " enc " << enc.size() << ": " << s.ToString();
    if (s.ok()) {
      ASSERT_EQ(out, *want) << "iter " << iter;
      ++accepted;
    } else {
      EXPECT_EQ(s.code(), mode <= 2 ? Code::kCorruption : Code::kInvalidArgument);
      ++rejected;
    }
  }
  // Both outcomes were exercised.
  EXPECT_GT(accepted, 1000u);
  EXPECT_GT(rejected, 1000u);
}

// Reference counts: non-zero words among the whole 4- and 2-byte words.
ZvcCounts RefCounts(const Bytes& in) {
  ZvcCounts c;
  for (size_t i = 0; i + 4 <= in.size(); i += 4) {
    c.nz32 += (in[i] | in[i + 1] | in[i + 2] | in[i + 3]) != 0;
  }
  for (size_t i = 0; i + 2 <= in.size(); i += 2) c.nz16 += (in[i] | in[i + 1]) != 0;
  return c;
}

// The copy-and-count pass copies exactly (at any alignment, nothing outside the span) and
// counts as the counting pass does.
TEST_P(Zvc, CopyCountCopiesAndCounts) {
  std::mt19937_64 rng(7);
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 300; ++n) sizes.push_back(n);
  for (size_t n : {4096, 65536 - 3, 65536, 65536 + 5, 262144}) sizes.push_back(n);
  for (size_t n : sizes) {
    for (double p : {0.0, 0.5, 0.97, 1.0}) {
      const Bytes in = Sparse(rng, n, p, 1 + rng() % 4);
      const size_t shift = rng() % 16;
      Bytes out(n + shift + 1, 0xC5);
      const ZvcCounts c = ZvcCopyCount({out.data() + shift, n}, in);
      const ZvcCounts want = RefCounts(in);
      ASSERT_EQ(c.nz32, want.nz32) << n;
      ASSERT_EQ(c.nz16, want.nz16) << n;
      const ZvcCounts alone = ZvcCount(in);
      ASSERT_EQ(alone.nz32, want.nz32) << n;
      ASSERT_EQ(alone.nz16, want.nz16) << n;
      ASSERT_TRUE(std::equal(in.begin(), in.end(), out.begin() + static_cast<ptrdiff_t>(shift)));
      for (size_t i = 0; i < shift; ++i) ASSERT_EQ(out[i], 0xC5);
      ASSERT_EQ(out.back(), 0xC5);
    }
  }
}

// Counts of pieces that start and end on multiples of 4 (the last may end anywhere) add up.
TEST_P(Zvc, CopyCountPiecesAddUp) {
  std::mt19937_64 rng(8);
  for (int round = 0; round < 200; ++round) {
    const size_t n = 1 + rng() % 20000;
    const Bytes in = Sparse(rng, n, 0.8, 1 + rng() % 4);
    Bytes out(n, 0);
    ZvcCounts sum;
    size_t at = 0;
    while (at < n) {
      size_t len = 4 * (1 + rng() % 600);
      if (at + len >= n) len = n - at;
      const ZvcCounts c = ZvcCopyCount({out.data() + at, len}, {in.data() + at, len});
      sum.nz32 += c.nz32;
      sum.nz16 += c.nz16;
      at += len;
    }
    const ZvcCounts want = RefCounts(in);
    ASSERT_EQ(sum.nz32, want.nz32);
    ASSERT_EQ(sum.nz16, want.nz16);
    ASSERT_EQ(out, in);
  }
}

// Encoding from counts gives ZvcEncode's mode and bytes; counts of other bytes are refused.
TEST_P(Zvc, EncodeChosenMatchesEncode) {
  std::mt19937_64 rng(9);
  for (int round = 0; round < 300; ++round) {
    const size_t n = rng() % 70000;
    const Bytes in = Sparse(rng, n, round % 2 ? 0.9 : 0.3, 1 + rng() % 4);
    const ZvcChoice choice = ZvcChoose(n, ZvcCount(in));
    Bytes want;
    ASSERT_EQ(choice.mode, ZvcEncode(in, &want));
    ASSERT_EQ(choice.size, want.size());
    if (choice.mode == ZvcMode::kRaw) continue;
    Bytes out(ZvcMaxEncodedSize(n));
    auto got = ZvcEncodeChosen(in, choice, out);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got.value(), want.size());
    out.resize(got.value());
    ASSERT_EQ(out, want);
  }
  // Counts that claim one non-zero word fewer: another size, Internal. (The buffer has room
  // for any encoding of these bytes.)
  const Bytes in = Sparse(rng, 4096, 0.9, 4);
  ZvcCounts c = ZvcCount(in);
  ASSERT_GT(c.nz32, 0u);
  --c.nz32;
  const ZvcChoice lie = ZvcChoose(in.size(), c);
  ASSERT_EQ(lie.mode, ZvcMode::kWord32);
  Bytes out(2 * in.size());
  EXPECT_EQ(ZvcEncodeChosen(in, lie, out).status().code(), Code::kInternal);
  // All-zero counts for bytes that are not zeros: refused too.
  EXPECT_EQ(ZvcEncodeChosen(in, ZvcChoose(in.size(), ZvcCounts{}), out).status().code(),
            Code::kInternal);
  EXPECT_EQ(ZvcEncodeChosen(in, ZvcChoice{ZvcMode::kRaw, in.size()}, out).status().code(),
            Code::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Kernels, Zvc, ::testing::Values("portable", "ssse3"),
                         [](const auto& info) { return info.param; });

TEST(ZvcKernels, AutomaticChoiceIsTheFastestSupported) {
  zvc_internal::UseKernels(nullptr);
  const char* want = zvc_internal::Ssse3Kernels() != nullptr ? "ssse3" : "portable";
  EXPECT_STREQ(ZvcKernelName(), want);
  EXPECT_STREQ(ZvcModeName(ZvcMode::kWord16), "word16");
  EXPECT_EQ(ZvcEncodedSize(ZvcMode::kWord32, 1003, 10), 32u + 40u + 3u);
  EXPECT_EQ(ZvcEncodedSize(ZvcMode::kWord16, 1003, 10), 63u + 20u + 1u);
  EXPECT_EQ(ZvcEncodedSize(ZvcMode::kRaw, 1003, 0), 1003u);
}

}  // namespace
}  // namespace epochfs::spill
