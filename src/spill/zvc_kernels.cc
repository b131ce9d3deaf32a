// Word loops of the ZVC codec; see zvc_kernels.h for their contracts.
#include "zvc_kernels.h"

#include <array>
#include <atomic>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define EPOCHFS_ZVC_X86 1
#endif

namespace epochfs::spill::zvc_internal {
namespace {

template <class Word>
Word LoadWord(const uint8_t* p) {
  Word w;
  std::memcpy(&w, p, sizeof(Word));
  return w;
}

template <class Word>
void StoreWord(uint8_t* p, Word w) {
  std::memcpy(p, &w, sizeof(Word));
}

// ---- portable ---------------------------------------------------------------------------

void CountPortable(const uint8_t* in, size_t n, size_t* nz32, size_t* nz16) {
  // Fixed-length inner loops so that -O2's cheap vectoriser takes them.
  constexpr size_t kBlockWords = 64;
  const size_t words = n / 4;
  size_t c32 = 0, c16 = 0, i = 0;
  for (; i + kBlockWords <= words; i += kBlockWords) {
    uint32_t b32 = 0, b16 = 0;
    for (size_t j = 0; j < kBlockWords; ++j) {
      const uint32_t w = LoadWord<uint32_t>(in + 4 * (i + j));
      b32 += w != 0;
      b16 += static_cast<uint32_t>((w & 0xffffu) != 0) + static_cast<uint32_t>((w >> 16) != 0);
    }
    c32 += b32;
    c16 += b16;
  }
  for (; i < words; ++i) {
    const uint32_t w = LoadWord<uint32_t>(in + 4 * i);
    c32 += w != 0;
    c16 += static_cast<size_t>((w & 0xffffu) != 0) + static_cast<size_t>((w >> 16) != 0);
  }
  if (n % 4 >= 2) c16 += LoadWord<uint16_t>(in + 4 * words) != 0;
  *nz32 = c32;
  *nz16 = c16;
}

void CopyCountPortable(uint8_t* out, const uint8_t* in, size_t n, size_t* nz32, size_t* nz16) {
  // The copy leaves the bytes in cache for the count.
  if (n != 0) std::memcpy(out, in, n);
  CountPortable(out, n, nz32, nz16);
}

// Encodes words [0, nwords) exactly: stores only inside the packed words.
template <class Word>
uint8_t* EncodeExact(const uint8_t* in, size_t nwords, uint8_t* bitmap, uint8_t* dst) {
  constexpr size_t w = sizeof(Word);
  for (size_t b = 0; b * 8 < nwords; ++b) {
    const size_t end = nwords - b * 8 < 8 ? nwords - b * 8 : 8;
    uint32_t m = 0;
    for (size_t j = 0; j < end; ++j) {
      const Word x = LoadWord<Word>(in + (b * 8 + j) * w);
      if (x != 0) {
        m |= 1u << j;
        StoreWord(dst, x);
        dst += w;
      }
    }
    bitmap[b] = static_cast<uint8_t>(m);
  }
  return dst;
}

// Branch-free per word: every word is stored, the pointer only moves past non-zero ones, so a
// group of 8 words may write up to 8 * w bytes from where it starts.
template <class Word>
uint8_t* EncodePortable(const uint8_t* in, size_t nwords, uint8_t* bitmap, uint8_t* dst,
                        uint8_t* limit) {
  constexpr size_t w = sizeof(Word);
  const size_t groups = nwords / 8;
  size_t b = 0;
  for (; b < groups && static_cast<size_t>(limit - dst) >= 8 * w; ++b) {
    const uint8_t* src = in + b * 8 * w;
    uint32_t m = 0;
    for (size_t j = 0; j < 8; ++j) {
      const Word x = LoadWord<Word>(src + j * w);
      const uint32_t nz = x != 0;
      StoreWord(dst, x);
      dst += nz * w;
      m |= nz << j;
    }
    bitmap[b] = static_cast<uint8_t>(m);
  }
  return EncodeExact<Word>(in + b * 8 * w, nwords - b * 8, bitmap + b, dst);
}

// Decodes words [0, nwords) reading only the packed words themselves. The vector loops end
// here when fewer than 16 or 32 packed bytes are left, which can be most of a sparse chunk:
// all-zero groups of 8 words take one memset.
template <class Word>
void DecodeExact(const uint8_t* bitmap, const uint8_t* src, size_t nwords, uint8_t* out) {
  constexpr size_t w = sizeof(Word);
  for (size_t b = 0; b * 8 < nwords; ++b) {
    const size_t end = nwords - b * 8 < 8 ? nwords - b * 8 : 8;
    uint8_t* o = out + b * 8 * w;
    const uint32_t m = bitmap[b];
    if (m == 0) {
      std::memset(o, 0, end * w);
      continue;
    }
    for (size_t j = 0; j < end; ++j) {
      if ((m >> j) & 1) {
        std::memcpy(o + j * w, src, w);
        src += w;
      } else {
        std::memset(o + j * w, 0, w);
      }
    }
  }
}

template <class Word>
void DecodePortable(const uint8_t* bitmap, const uint8_t* src, const uint8_t* limit,
                    size_t nwords, uint8_t* out) {
  constexpr size_t w = sizeof(Word);
  const size_t groups = nwords / 8;
  size_t b = 0;
  for (; b < groups && static_cast<size_t>(limit - src) >= 8 * w; ++b) {
    const uint32_t m = bitmap[b];
    uint8_t* o = out + b * 8 * w;
    for (size_t j = 0; j < 8; ++j) {
      const uint32_t bit = (m >> j) & 1;
      const Word x = LoadWord<Word>(src) & static_cast<Word>(0u - bit);
      StoreWord(o + j * w, x);
      src += bit * w;
    }
  }
  DecodeExact<Word>(bitmap + b, src, nwords - b * 8, out + b * 8 * w);
}

// ---- SSSE3 + POPCNT -----------------------------------------------------------------------
#ifdef EPOCHFS_ZVC_X86

// Shuffle controls for _mm_shuffle_epi8 (0x80 = zero byte). Compress[m] gathers the words
// whose bit is set in m to the front; Expand[m] does the reverse and zeroes the other words.
template <size_t kWord, size_t kMasks>
struct alignas(16) ShuffleTable {
  uint8_t v[kMasks][16];
};

template <size_t kWord, size_t kMasks>
constexpr ShuffleTable<kWord, kMasks> MakeTable(bool expand) {
  ShuffleTable<kWord, kMasks> t{};
  constexpr size_t lanes = 16 / kWord;
  for (size_t m = 0; m < kMasks; ++m) {
    for (size_t i = 0; i < 16; ++i) t.v[m][i] = 0x80;
    size_t rank = 0;
    for (size_t lane = 0; lane < lanes; ++lane) {
      if (!((m >> lane) & 1)) continue;
      for (size_t k = 0; k < kWord; ++k) {
        const size_t to = expand ? lane * kWord + k : rank * kWord + k;
        const size_t from = expand ? rank * kWord + k : lane * kWord + k;
        t.v[m][to] = static_cast<uint8_t>(from);
      }
      ++rank;
    }
  }
  return t;
}

constexpr ShuffleTable<4, 16> kCompress32 = MakeTable<4, 16>(false);
constexpr ShuffleTable<4, 16> kExpand32 = MakeTable<4, 16>(true);
constexpr ShuffleTable<2, 256> kCompress16 = MakeTable<2, 256>(false);
constexpr ShuffleTable<2, 256> kExpand16 = MakeTable<2, 256>(true);

#define EPOCHFS_ZVC_TARGET __attribute__((target("ssse3,popcnt")))

EPOCHFS_ZVC_TARGET inline __m128i Shuffle(__m128i v, const uint8_t* control) {
  return _mm_shuffle_epi8(v, _mm_load_si128(reinterpret_cast<const __m128i*>(control)));
}

EPOCHFS_ZVC_TARGET void CountSsse3(const uint8_t* in, size_t n, size_t* nz32, size_t* nz16) {
  // Counts zero words with compare masks (-1 per zero word) in 32-bit lanes, folded into
  // 64-bit totals every 2^20 vectors so that no lane can overflow.
  const __m128i zero = _mm_setzero_si128();
  const __m128i ones16 = _mm_set1_epi16(1);
  const size_t vecs = n / 16;
  size_t z32 = 0, z16 = 0, v = 0;
  while (v < vecs) {
    const size_t stop = vecs - v > (size_t{1} << 20) ? v + (size_t{1} << 20) : vecs;
    __m128i a32 = zero, a16 = zero;
    for (; v < stop; ++v) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16 * v));
      a32 = _mm_add_epi32(a32, _mm_cmpeq_epi32(x, zero));
      a16 = _mm_add_epi32(a16, _mm_madd_epi16(_mm_cmpeq_epi16(x, zero), ones16));
    }
    alignas(16) int32_t l32[4], l16[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(l32), a32);
    _mm_store_si128(reinterpret_cast<__m128i*>(l16), a16);
    for (int i = 0; i < 4; ++i) {
      z32 += static_cast<size_t>(-static_cast<int64_t>(l32[i]));
      z16 += static_cast<size_t>(-static_cast<int64_t>(l16[i]));
    }
  }
  size_t t32 = 0, t16 = 0;
  CountPortable(in + 16 * vecs, n - 16 * vecs, &t32, &t16);
  *nz32 = (vecs * 4 - z32) + t32;
  *nz16 = (vecs * 8 - z16) + t16;
}

// The count of CountSsse3 fused with the copy: each vector is loaded once, stored to `out`
// and compared; four vectors per step. With kStream, `out` is 16-byte aligned and the stores
// bypass the cache: the destination (a staging chunk on its way to the SSD) is not read again
// soon, and a cached store would first have to read every line it writes.
template <bool kStream>
EPOCHFS_ZVC_TARGET void CopyCountSteps(uint8_t* out, const uint8_t* in, size_t steps,
                                       size_t* z32_out, size_t* z16_out) {
  const __m128i zero = _mm_setzero_si128();
  const __m128i ones16 = _mm_set1_epi16(1);
  size_t z32 = 0, z16 = 0, s = 0;
  while (s < steps) {
    // Each lane gains at most 4 (32-bit) or 8 (16-bit) per step: fold before 2^28 steps.
    const size_t stop = steps - s > (size_t{1} << 24) ? s + (size_t{1} << 24) : steps;
    __m128i a32 = zero, a16 = zero;
    for (; s < stop; ++s) {
      const uint8_t* p = in + 64 * s;
      auto* o = reinterpret_cast<__m128i*>(out + 64 * s);
      const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
      const __m128i x2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32));
      const __m128i x3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 48));
      if constexpr (kStream) {
        _mm_stream_si128(o, x0);
        _mm_stream_si128(o + 1, x1);
        _mm_stream_si128(o + 2, x2);
        _mm_stream_si128(o + 3, x3);
      } else {
        _mm_storeu_si128(o, x0);
        _mm_storeu_si128(o + 1, x1);
        _mm_storeu_si128(o + 2, x2);
        _mm_storeu_si128(o + 3, x3);
      }
      const __m128i c32 = _mm_add_epi32(
          _mm_add_epi32(_mm_cmpeq_epi32(x0, zero), _mm_cmpeq_epi32(x1, zero)),
          _mm_add_epi32(_mm_cmpeq_epi32(x2, zero), _mm_cmpeq_epi32(x3, zero)));
      const __m128i c16 = _mm_add_epi16(
          _mm_add_epi16(_mm_cmpeq_epi16(x0, zero), _mm_cmpeq_epi16(x1, zero)),
          _mm_add_epi16(_mm_cmpeq_epi16(x2, zero), _mm_cmpeq_epi16(x3, zero)));
      a32 = _mm_add_epi32(a32, c32);
      a16 = _mm_add_epi32(a16, _mm_madd_epi16(c16, ones16));
    }
    alignas(16) int32_t l32[4], l16[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(l32), a32);
    _mm_store_si128(reinterpret_cast<__m128i*>(l16), a16);
    for (int i = 0; i < 4; ++i) {
      z32 += static_cast<size_t>(-static_cast<int64_t>(l32[i]));
      z16 += static_cast<size_t>(-static_cast<int64_t>(l16[i]));
    }
  }
  if constexpr (kStream) _mm_sfence();  // the streamed stores are visible before we return
  *z32_out = z32;
  *z16_out = z16;
}

// Copies of at least this many bytes stream their stores (see CopyCountSteps).
constexpr size_t kStreamBytes = 64 * 1024;

EPOCHFS_ZVC_TARGET void CopyCountSsse3(uint8_t* out, const uint8_t* in, size_t n, size_t* nz32,
                                       size_t* nz16) {
  // Streaming needs `out` 16-byte aligned: a head of 0, 4, 8 or 12 bytes gets it there
  // (a whole number of words, so the counts still add up), when `out` is 4-byte aligned.
  const size_t mis = reinterpret_cast<uintptr_t>(out) % 16;
  const bool stream = n >= kStreamBytes && mis % 4 == 0;
  size_t head = 0, h32 = 0, h16 = 0;
  if (stream && mis != 0) {
    head = 16 - mis;
    CopyCountPortable(out, in, head, &h32, &h16);
  }
  const size_t steps = (n - head) / 64;
  size_t z32 = 0, z16 = 0;
  if (stream) {
    CopyCountSteps<true>(out + head, in + head, steps, &z32, &z16);
  } else {
    CopyCountSteps<false>(out, in, steps, &z32, &z16);
  }
  const size_t done = head + 64 * steps;
  size_t t32 = 0, t16 = 0;
  CopyCountPortable(out + done, in + done, n - done, &t32, &t16);
  *nz32 = h32 + (steps * 16 - z32) + t32;
  *nz16 = h16 + (steps * 32 - z16) + t16;
}

EPOCHFS_ZVC_TARGET uint8_t* Encode32Ssse3(const uint8_t* in, size_t nwords, uint8_t* bitmap,
                                          uint8_t* dst, uint8_t* limit) {
  const __m128i zero = _mm_setzero_si128();
  const size_t groups = nwords / 8;
  size_t b = 0;
  // Two 16-byte stores per group, each at most 16 bytes past the packed end so far.
  for (; b < groups && limit - dst >= 32; ++b) {
    const uint8_t* src = in + 32 * b;
    const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
    const unsigned m0 = ~_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v0, zero))) & 15u;
    const unsigned m1 = ~_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v1, zero))) & 15u;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), Shuffle(v0, kCompress32.v[m0]));
    dst += 4 * __builtin_popcount(m0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), Shuffle(v1, kCompress32.v[m1]));
    dst += 4 * __builtin_popcount(m1);
    bitmap[b] = static_cast<uint8_t>(m0 | (m1 << 4));
  }
  return EncodeExact<uint32_t>(in + 32 * b, nwords - 8 * b, bitmap + b, dst);
}

EPOCHFS_ZVC_TARGET uint8_t* Encode16Ssse3(const uint8_t* in, size_t nwords, uint8_t* bitmap,
                                          uint8_t* dst, uint8_t* limit) {
  const __m128i zero = _mm_setzero_si128();
  const size_t groups = nwords / 8;
  size_t b = 0;
  for (; b < groups && limit - dst >= 16; ++b) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16 * b));
    const __m128i z = _mm_cmpeq_epi16(v, zero);
    const unsigned m = ~_mm_movemask_epi8(_mm_packs_epi16(z, zero)) & 0xffu;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), Shuffle(v, kCompress16.v[m]));
    dst += 2 * __builtin_popcount(m);
    bitmap[b] = static_cast<uint8_t>(m);
  }
  return EncodeExact<uint16_t>(in + 16 * b, nwords - 8 * b, bitmap + b, dst);
}

EPOCHFS_ZVC_TARGET void Decode32Ssse3(const uint8_t* bitmap, const uint8_t* src,
                                      const uint8_t* limit, size_t nwords, uint8_t* out) {
  const size_t groups = nwords / 8;
  size_t b = 0;
  // Two 16-byte loads per group, the second at most 16 bytes further.
  for (; b < groups && limit - src >= 32; ++b) {
    const unsigned m = bitmap[b];
    const unsigned lo = m & 15u, hi = m >> 4;
    uint8_t* o = out + 32 * b;
    const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    src += 4 * __builtin_popcount(lo);
    const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    src += 4 * __builtin_popcount(hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o), Shuffle(v0, kExpand32.v[lo]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 16), Shuffle(v1, kExpand32.v[hi]));
  }
  DecodeExact<uint32_t>(bitmap + b, src, nwords - 8 * b, out + 32 * b);
}

EPOCHFS_ZVC_TARGET void Decode16Ssse3(const uint8_t* bitmap, const uint8_t* src,
                                      const uint8_t* limit, size_t nwords, uint8_t* out) {
  const size_t groups = nwords / 8;
  size_t b = 0;
  for (; b < groups && limit - src >= 16; ++b) {
    const unsigned m = bitmap[b];
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    src += 2 * __builtin_popcount(m);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * b), Shuffle(v, kExpand16.v[m]));
  }
  DecodeExact<uint16_t>(bitmap + b, src, nwords - 8 * b, out + 16 * b);
}

constexpr Kernels kSsse3 = {"ssse3",       CountSsse3,    CopyCountSsse3, Encode32Ssse3,
                            Encode16Ssse3, Decode32Ssse3, Decode16Ssse3};
#endif  // EPOCHFS_ZVC_X86

constexpr Kernels kPortable = {"portable",
                               CountPortable,
                               CopyCountPortable,
                               EncodePortable<uint32_t>,
                               EncodePortable<uint16_t>,
                               DecodePortable<uint32_t>,
                               DecodePortable<uint16_t>};

std::atomic<const Kernels*> g_override{nullptr};

const Kernels& Detect() {
  const Kernels* k = Ssse3Kernels();
  return k != nullptr ? *k : kPortable;
}

}  // namespace

const Kernels& PortableKernels() { return kPortable; }

const Kernels* Ssse3Kernels() {
#ifdef EPOCHFS_ZVC_X86
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("popcnt");
  }();
  return supported ? &kSsse3 : nullptr;
#else
  return nullptr;
#endif
}

const Kernels& ActiveKernels() {
  static const Kernels& detected = Detect();
  const Kernels* k = g_override.load(std::memory_order_relaxed);
  return k != nullptr ? *k : detected;
}

void UseKernels(const Kernels* k) { g_override.store(k, std::memory_order_relaxed); }

}  // namespace epochfs::spill::zvc_internal
