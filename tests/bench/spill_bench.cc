// spill_bench: throughput of the spill store itself (no FUSE), against fio on
// the same directory in the same run.
//
//   spill_bench DIR [MiB=1024] [random|sparse] [chunk KiB=256] [options...]
//     options: qd=N staging_mib=N compress=0|1 fixed=0|1 reps=N fio=0|1 rewrite=0|1
//     (rewrite=1: the timed write overwrites a file written before, as fio's
//     write does after laying its file out)
//
// Store: sequential write of MiB in 1 MiB pieces, then Sync (write GB/s
// counts both); WriteOut (staging dropped); sequential read in 1 MiB pieces
// (read GB/s); the bytes read are compared with the bytes written (outside the
// timed loop). "sparse" data has 3 of 4 32-bit words zero (ZVC pays), "random"
// does not compress. fio (if on PATH): the same size, --ioengine=io_uring
// --direct=1 --bs=1M --iodepth=16, write then read, in DIR; its write goes to
// a new file too (fio fallocates it, then writes), or with rewrite=1 to a file
// it wrote before. Each figure is the
// best of `reps` runs. DIR must be on a real disk (O_DIRECT).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "epochfs/spill/spill_store.h"

using epochfs::spill::SpillOptions;
using epochfs::spill::SpillStore;

namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// fio's bandwidth in bytes/s (from its JSON "bw_bytes" of the job's rw side).
double Fio(const std::string& dir, uint64_t mib, const char* rw) {
  std::string cmd = "fio --name=spillbench --directory=" + dir + " --filename=fio.dat --rw=" + rw +
                    " --bs=1M --size=" + std::to_string(mib) +
                    "M --ioengine=io_uring --direct=1 --iodepth=16 --output-format=json 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return 0;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (pclose(p) != 0) return 0;
  const std::string side = std::string("\"") + (std::strcmp(rw, "read") == 0 ? "read" : "write") + "\" : {";
  size_t at = out.find(side);
  if (at == std::string::npos) return 0;
  at = out.find("\"bw_bytes\"", at);
  if (at == std::string::npos) return 0;
  return std::strtod(out.c_str() + out.find(':', at) + 1, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [MiB] [random|sparse] [chunk KiB] [qd=N staging_mib=N compress=0|1 fixed=0|1 reps=N fio=0|1 rewrite=0|1]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const uint64_t mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1024;
  const std::string kind = argc > 3 ? argv[3] : "random";
  SpillOptions o;
  o.dir = dir + "/store";
  o.chunk_bytes = (argc > 4 ? static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 10)) : 256) << 10;
  int reps = 3;
  bool run_fio = true;
  bool rewrite = false;
  for (int i = 5; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&] { return std::strtoull(a.c_str() + a.find('=') + 1, nullptr, 10); };
    if (a.rfind("qd=", 0) == 0) o.queue_depth = static_cast<uint32_t>(val());
    else if (a.rfind("staging_mib=", 0) == 0) o.staging_bytes = val() << 20;
    else if (a.rfind("compress=", 0) == 0) o.compress = val() != 0;
    else if (a.rfind("fixed=", 0) == 0) o.fixed_buffers = val() != 0;
    else if (a.rfind("reps=", 0) == 0) reps = static_cast<int>(val());
    else if (a.rfind("fio=", 0) == 0) run_fio = val() != 0;
    else if (a.rfind("rewrite=", 0) == 0) rewrite = val() != 0;
  }
  const size_t piece = 1 << 20;
  // 64 MiB of source data, cycled.
  std::vector<uint8_t> src(64 << 20, 0);
  std::mt19937_64 rng(42);
  if (kind == "sparse") {
    for (size_t i = 0; i + 16 <= src.size(); i += 16) {
      const uint32_t v = static_cast<uint32_t>(rng()) | 1;
      std::memcpy(&src[i + 4 * (rng() % 4)], &v, 4);
    }
  } else {
    for (size_t i = 0; i < src.size(); i += 8) {
      const uint64_t v = rng();
      std::memcpy(&src[i], &v, 8);
    }
  }
  std::system(("rm -rf '" + o.dir + "'").c_str());
  auto r = SpillStore::Open(o);
  if (!r.ok()) {
    std::fprintf(stderr, "spill_bench: %s\n", r.status().ToString().c_str());
    return 1;
  }
  auto store = std::move(r).value();
  const uint64_t bytes = mib << 20;
  double best_w = 0, best_r = 0;
  bool ok = true;
  for (int rep = 0; rep < reps && ok; ++rep) {
    const std::string name = "bench" + std::to_string(rep);
    auto f = store->OpenFile(name, true, false, true, 0600, getuid(), getgid()).value();
    if (rewrite) {
      // Like fio's layout: the file exists (allocated and written) before the
      // timed write overwrites it.
      for (uint64_t off = 0; off < bytes; off += piece) {
        if (!f->Write(off, {src.data() + off % src.size(), piece}).ok()) return 1;
      }
      if (!f->Sync().ok() || !store->WriteOut(name).ok()) return 1;
    }
    auto t0 = std::chrono::steady_clock::now();
    for (uint64_t off = 0; off < bytes; off += piece) {
      auto w = f->Write(off, {src.data() + off % src.size(), piece});
      if (!w.ok()) {
        std::fprintf(stderr, "write: %s\n", w.status().ToString().c_str());
        return 1;
      }
    }
    if (!f->Sync().ok()) return 1;
    best_w = std::max(best_w, bytes / Seconds(t0));
    if (!store->WriteOut(name).ok()) return 1;
    std::vector<uint8_t> out(bytes < (256ull << 20) ? bytes : (256ull << 20));
    t0 = std::chrono::steady_clock::now();
    double t_read = 0;
    for (uint64_t off = 0; off < bytes; off += piece) {
      uint8_t* dst = out.data() + off % out.size();
      auto rd = f->Read(off, {dst, piece});
      if (!rd.ok() || rd.value() != piece) {
        std::fprintf(stderr, "read failed at %llu\n", static_cast<unsigned long long>(off));
        return 1;
      }
      if ((off + piece) % out.size() == 0 || off + piece >= bytes) {
        t_read += Seconds(t0);
        // Verify (not timed).
        const uint64_t base = off + piece - ((off + piece - 1) % out.size() + 1);
        for (uint64_t o2 = base; o2 <= off; o2 += piece) {
          if (std::memcmp(out.data() + o2 % out.size(), src.data() + o2 % src.size(), piece) != 0) {
            std::fprintf(stderr, "spill_bench: WRONG BYTES at %llu\n", static_cast<unsigned long long>(o2));
            ok = false;
          }
        }
        t0 = std::chrono::steady_clock::now();
      }
    }
    best_r = std::max(best_r, bytes / t_read);
    f.reset();
    (void)store->Unlink(name);
  }
  const auto st = store->stats();
  store.reset();
  std::system(("rm -rf '" + o.dir + "'").c_str());
  std::printf("spill_bench: %llu MiB %s data, chunk %u KiB, qd %u, staging %llu MiB, compress %d, "
              "%s, best of %d\n",
              static_cast<unsigned long long>(mib), kind.c_str(), o.chunk_bytes >> 10, o.queue_depth,
              static_cast<unsigned long long>(o.staging_bytes >> 20), o.compress ? 1 : 0,
              rewrite ? "overwriting an existing file" : "new file", reps);
  std::printf("  store  write+sync %6.2f GB/s   read %6.2f GB/s   (chunks compressed %llu, raw %llu)\n",
              best_w / 1e9, best_r / 1e9, static_cast<unsigned long long>(st.chunks_compressed),
              static_cast<unsigned long long>(st.chunks_raw));
  if (!run_fio) {
    std::printf("  fio skipped (fio=0)\n");
  } else if (std::system("command -v fio >/dev/null 2>&1") == 0) {
    double fw = 0, fr = 0;
    const std::string rm_fio = "rm -f '" + dir + "/fio.dat'";
    std::system(rm_fio.c_str());
    if (rewrite) Fio(dir, mib, "write");  // untimed: the timed writes overwrite it
    for (int rep = 0; rep < reps; ++rep) {
      // Like the store: a new file each time (fio fallocates it, then writes),
      // or (rewrite=1) the same file overwritten.
      if (!rewrite) std::system(rm_fio.c_str());
      fw = std::max(fw, Fio(dir, mib, "write"));
      fr = std::max(fr, Fio(dir, mib, "read"));
    }
    std::system(("rm -f '" + dir + "/fio.dat'").c_str());
    std::printf("  fio    write      %6.2f GB/s   read %6.2f GB/s\n", fw / 1e9, fr / 1e9);
    if (fw > 0 && fr > 0) {
      std::printf("  ratio  write      %6.2f          read %6.2f   (store / fio)\n", best_w / fw,
                  best_r / fr);
    }
  } else {
    std::printf("  fio not installed: no baseline\n");
  }
  return ok ? 0 : 1;
}
