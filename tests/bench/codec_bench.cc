// codec_bench: zero-value compression (the spill tier's codec) against LZ4 and zstd -1 on the
// same buffers: f32 "activations" whose zeros are placed at random 32-bit words (as after a
// ReLU) at 0, 50, 80, 95 and 100 % zero words, non-zero values half-normal floats. Every codec
// encodes and decodes the buffer chunk by chunk (each chunk independently, as the spill store
// does), in one thread; decoded bytes are checked against the input.
//
// Prints, per zero fraction and codec: compression ratio (input / encoded bytes), encode and
// decode GB/s (10^9 input bytes per second of this thread's CPU time, best of R repetitions),
// and ZVC's speed as a multiple of each other codec's, from this one run.
//
//   BUILD_DIR/tests/bench/codec_bench [MiB per buffer = 64] [chunk KiB = 128] [repetitions = 5]
#include <lz4.h>
#include <time.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "epochfs/spill/zvc.h"
#include "zvc_kernels.h"

namespace {

using epochfs::spill::ZvcMode;
namespace zi = epochfs::spill::zvc_internal;

double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// One codec working on independent chunks: encode chunk i into its slot, decode it back.
struct Codec {
  std::string name;
  size_t (*bound)(size_t n);
  // Returns the encoded size (0 on failure); `tag` carries per-chunk side information (the
  // ZVC mode) to decode.
  std::function<size_t(const uint8_t* in, size_t n, uint8_t* out, size_t cap, uint8_t* tag)>
      encode;
  std::function<bool(const uint8_t* enc, size_t size, uint8_t tag, uint8_t* out, size_t n)>
      decode;
};

struct Result {
  double ratio = 0, enc_gbs = 0, dec_gbs = 0;
  size_t modes[3] = {0, 0, 0};
};

Result Run(const Codec& c, const std::vector<uint8_t>& input, size_t chunk, int reps) {
  const size_t chunks = (input.size() + chunk - 1) / chunk;
  const size_t slot = c.bound(chunk);
  std::vector<uint8_t> enc(chunks * slot);
  std::vector<size_t> sizes(chunks);
  std::vector<uint8_t> tags(chunks);
  std::vector<uint8_t> out(input.size());
  Result r;
  double best_enc = 1e30, best_dec = 1e30;
  for (int rep = 0; rep < reps; ++rep) {
    double t0 = ThreadSeconds();
    for (size_t i = 0; i < chunks; ++i) {
      const size_t n = std::min(chunk, input.size() - i * chunk);
      sizes[i] = c.encode(input.data() + i * chunk, n, enc.data() + i * slot, slot, &tags[i]);
      if (sizes[i] == 0 && n != 0) {
        std::fprintf(stderr, "%s: encode failed\n", c.name.c_str());
        std::exit(1);
      }
    }
    double t1 = ThreadSeconds();
    for (size_t i = 0; i < chunks; ++i) {
      const size_t n = std::min(chunk, input.size() - i * chunk);
      if (!c.decode(enc.data() + i * slot, sizes[i], tags[i], out.data() + i * chunk, n)) {
        std::fprintf(stderr, "%s: decode failed\n", c.name.c_str());
        std::exit(1);
      }
    }
    double t2 = ThreadSeconds();
    best_enc = std::min(best_enc, t1 - t0);
    best_dec = std::min(best_dec, t2 - t1);
    if (out != input) {
      std::fprintf(stderr, "%s: decoded bytes differ from the input\n", c.name.c_str());
      std::exit(1);
    }
    std::fill(out.begin(), out.end(), 0xA5);
  }
  size_t total = 0;
  for (size_t i = 0; i < chunks; ++i) {
    total += sizes[i];
    if (tags[i] < 3) ++r.modes[tags[i]];
  }
  r.ratio = static_cast<double>(input.size()) / static_cast<double>(total);
  r.enc_gbs = static_cast<double>(input.size()) / best_enc * 1e-9;
  r.dec_gbs = static_cast<double>(input.size()) / best_dec * 1e-9;
  return r;
}

Codec Zvc(const zi::Kernels* kernels, const std::string& name) {
  Codec c;
  c.name = name;
  c.bound = epochfs::spill::ZvcMaxEncodedSize;
  c.encode = [kernels](const uint8_t* in, size_t n, uint8_t* out, size_t cap, uint8_t* tag) {
    zi::UseKernels(kernels);
    ZvcMode mode;
    size_t size = 0;
    if (!epochfs::spill::ZvcEncodeInto({in, n}, {out, cap}, &mode, &size).ok()) return size_t{0};
    *tag = static_cast<uint8_t>(mode);
    return size;
  };
  c.decode = [kernels](const uint8_t* enc, size_t size, uint8_t tag, uint8_t* out, size_t n) {
    zi::UseKernels(kernels);
    return epochfs::spill::ZvcDecode(static_cast<ZvcMode>(tag), {enc, size}, {out, n}).ok();
  };
  return c;
}

Codec Lz4() {
  Codec c;
  c.name = "lz4";
  c.bound = [](size_t n) { return static_cast<size_t>(LZ4_compressBound(static_cast<int>(n))); };
  c.encode = [](const uint8_t* in, size_t n, uint8_t* out, size_t cap, uint8_t* tag) {
    *tag = 255;
    const int r = LZ4_compress_default(reinterpret_cast<const char*>(in),
                                       reinterpret_cast<char*>(out), static_cast<int>(n),
                                       static_cast<int>(cap));
    return r > 0 ? static_cast<size_t>(r) : size_t{0};
  };
  c.decode = [](const uint8_t* enc, size_t size, uint8_t, uint8_t* out, size_t n) {
    return LZ4_decompress_safe(reinterpret_cast<const char*>(enc), reinterpret_cast<char*>(out),
                               static_cast<int>(size), static_cast<int>(n)) ==
           static_cast<int>(n);
  };
  return c;
}

Codec Zstd1(ZSTD_CCtx* cctx, ZSTD_DCtx* dctx) {
  Codec c;
  c.name = "zstd -1";
  c.bound = [](size_t n) { return ZSTD_compressBound(n); };
  c.encode = [cctx](const uint8_t* in, size_t n, uint8_t* out, size_t cap, uint8_t* tag) {
    *tag = 255;
    const size_t r = ZSTD_compressCCtx(cctx, out, cap, in, n, 1);
    return ZSTD_isError(r) ? size_t{0} : r;
  };
  c.decode = [dctx](const uint8_t* enc, size_t size, uint8_t, uint8_t* out, size_t n) {
    const size_t r = ZSTD_decompressDCtx(dctx, out, n, enc, size);
    return !ZSTD_isError(r) && r == n;
  };
  return c;
}

// f32 activations: each word zero with probability p, else |N(0, 1)| (never 0.0f).
std::vector<uint8_t> Activations(size_t bytes, double p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> f(bytes / 4);
  for (auto& x : f) {
    if (u(rng) < p) {
      x = 0.0f;
    } else {
      do x = std::fabs(normal(rng)); while (x == 0.0f);
    }
  }
  std::vector<uint8_t> b(f.size() * 4);
  std::memcpy(b.data(), f.data(), b.size());
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64;
  const size_t chunk_kib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 128;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 5;
  if (mib == 0 || chunk_kib == 0 || reps <= 0) {
    std::fprintf(stderr, "usage: codec_bench [MiB per buffer] [chunk KiB] [repetitions]\n");
    return 2;
  }
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  std::vector<Codec> codecs;
  if (zi::Ssse3Kernels() != nullptr) codecs.push_back(Zvc(zi::Ssse3Kernels(), "zvc (ssse3)"));
  codecs.push_back(Zvc(&zi::PortableKernels(), "zvc (portable)"));
  codecs.push_back(Lz4());
  codecs.push_back(Zstd1(cctx, dctx));

  std::printf("codec_bench: f32 activations, %zu MiB per buffer, %zu KiB chunks, best of %d, "
              "GB/s = 1e9 input bytes per CPU second of one thread; default zvc loops: %s\n\n",
              mib, chunk_kib, reps, epochfs::spill::ZvcKernelName());
  std::printf("| zero words | codec | ratio | encode GB/s | decode GB/s | zvc encode x | "
              "zvc decode x | chunk modes raw/w32/w16 |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (double p : {0.0, 0.5, 0.8, 0.95, 1.0}) {
    const auto input = Activations(mib << 20, p, 42);
    std::vector<Result> results;
    for (const auto& c : codecs) results.push_back(Run(c, input, chunk_kib << 10, reps));
    zi::UseKernels(nullptr);
    for (size_t i = 0; i < codecs.size(); ++i) {
      const Result& r = results[i];
      char modes[64] = "";
      if (codecs[i].name.rfind("zvc", 0) == 0) {
        std::snprintf(modes, sizeof modes, "%zu/%zu/%zu", r.modes[0], r.modes[1], r.modes[2]);
      }
      std::printf("| %2.0f %% | %s | %.2f | %.2f | %.2f | %.1f | %.1f | %s |\n", p * 100,
                  codecs[i].name.c_str(), r.ratio, r.enc_gbs, r.dec_gbs,
                  results[0].enc_gbs / r.enc_gbs, results[0].dec_gbs / r.dec_gbs, modes);
    }
  }
  ZSTD_freeCCtx(cctx);
  ZSTD_freeDCtx(dctx);
  return 0;
}
