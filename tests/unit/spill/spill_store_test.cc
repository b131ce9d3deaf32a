// SpillStore: randomized workloads against an in-memory reference (one thread
// and several), restart and crash durability, corruption detection (written
// slots zeroed or cut off on disk never read as holes), quota,
// ownership, staging residency. Runs on a real disk directory under /var/tmp
// (O_DIRECT; tmpfs may refuse it).
#include "epochfs/spill/spill_store.h"

#include <fcntl.h>
#include <ftw.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "chunk_format.h"
#include "epochfs/spill/zvc.h"
#include "temp_dir.h"

namespace epochfs::spill {
namespace {

constexpr uint32_t kChunk = 8192;

using testing::TempDir;

SpillOptions SmallOptions(const std::string& dir) {
  SpillOptions o;
  o.dir = dir + "/spill";
  o.chunk_bytes = kChunk;
  o.staging_bytes = 8 * kChunk;  // tiny: write-back and re-reads all the time
  o.queue_depth = 4;
  o.readahead_chunks = 2;
  return o;
}

std::unique_ptr<SpillStore> MustOpen(const SpillOptions& o) {
  auto r = SpillStore::Open(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

std::shared_ptr<SpillFile> MustOpenFile(SpillStore& s, const std::string& rel, bool create = true) {
  auto r = s.OpenFile(rel, create, false, false, 0644, getuid(), getgid());
  EXPECT_TRUE(r.ok()) << rel << ": " << r.status().ToString();
  return r.ok() ? r.value() : nullptr;
}

// Data with long zero runs, sparse non-zero words, or random bytes.
std::vector<uint8_t> MakeData(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> d(n, 0);
  switch (rng() % 3) {
    case 0:
      for (auto& b : d) b = static_cast<uint8_t>(rng());
      break;
    case 1:  // ReLU-like: about one word in four non-zero
      for (size_t i = 0; i + 4 <= n; i += 4) {
        if (rng() % 4 == 0) {
          uint32_t v = static_cast<uint32_t>(rng()) | 1;
          std::memcpy(&d[i], &v, 4);
        }
      }
      break;
    default:  // mostly zeros with a few bytes
      for (size_t i = 0; i < n / 64 + 1; ++i) d[rng() % n] = static_cast<uint8_t>(rng() | 1);
      break;
  }
  return d;
}

std::vector<uint8_t> ReadAll(SpillFile& f, Status* st = nullptr) {
  std::vector<uint8_t> out(f.size());
  size_t got = 0;
  while (got < out.size()) {
    auto r = f.Read(got, {out.data() + got, out.size() - got});
    if (!r.ok()) {
      if (st) *st = r.status();
      ADD_FAILURE() << r.status().ToString();
      return {};
    }
    if (r.value() == 0) break;
    got += r.value();
  }
  out.resize(got);
  return out;
}

void CheckStaging(const SpillStore& s, const SpillOptions& o) {
  const SpillStats st = s.stats();
  ASSERT_LE(st.staging_bytes, o.staging_bytes);
  ASSERT_LE(st.dirty_bytes, st.staging_bytes);
}

// One fsx-style run: random operations on a few files, compared with a
// reference after every step. `alone`: no other thread uses the store (then
// renames run too, and Prefetch must make a small file resident).
void FsxRun(SpillStore& store, const SpillOptions& o, uint64_t seed, int steps,
            const std::string& prefix, bool alone) {
  std::mt19937_64 rng(seed);
  std::map<std::string, std::vector<uint8_t>> ref;
  std::map<std::string, std::shared_ptr<SpillFile>> open;
  const int kFiles = 3;
  auto name = [&](int i) { return prefix + "f" + std::to_string(i); };
  for (int i = 0; i < kFiles; ++i) {
    open[name(i)] = MustOpenFile(store, name(i));
    ASSERT_TRUE(open[name(i)]);
    ref[name(i)];
  }
  const uint64_t kMax = 12 * kChunk + 123;
  for (int step = 0; step < steps; ++step) {
    const std::string n = name(static_cast<int>(rng() % kFiles));
    SpillFile& f = *open[n];
    std::vector<uint8_t>& r = ref[n];
    const int op = static_cast<int>(rng() % 100);
    std::string what;
    if (op < 35) {  // write
      const uint64_t off = rng() % kMax;
      const size_t len = 1 + rng() % (3 * kChunk);
      auto data = MakeData(rng, len);
      what = "write " + std::to_string(off) + "+" + std::to_string(len);
      auto w = f.Write(off, data);
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      ASSERT_EQ(w.value(), len);
      if (r.size() < off + len) r.resize(off + len, 0);
      std::copy(data.begin(), data.end(), r.begin() + static_cast<long>(off));
    } else if (op < 40) {  // whole-chunk aligned write
      const uint64_t off = (rng() % 12) * kChunk;
      const size_t len = kChunk * (1 + rng() % 3);
      auto data = MakeData(rng, len);
      what = "aligned write " + std::to_string(off) + "+" + std::to_string(len);
      ASSERT_TRUE(f.Write(off, data).ok());
      if (r.size() < off + len) r.resize(off + len, 0);
      std::copy(data.begin(), data.end(), r.begin() + static_cast<long>(off));
    } else if (op < 60) {  // read
      const uint64_t off = rng() % (kMax + kChunk);
      const size_t len = rng() % (3 * kChunk);
      what = "read " + std::to_string(off) + "+" + std::to_string(len);
      std::vector<uint8_t> buf(len, 0xEE);
      Result<size_t> rd = size_t{0};
      if (off % 2 == 0) {
        rd = f.Read(off, buf);
      } else {  // the same through the pieces of the staged chunks
        what += " (pieces)";
        size_t got = 0;
        Status ps = f.ReadPieces(off, len, [&](std::span<const struct iovec> pieces) {
          for (const auto& p : pieces) {
            std::memcpy(buf.data() + got, p.iov_base, p.iov_len);
            got += p.iov_len;
          }
        });
        if (ps.ok()) rd = got;
        else rd = ps;
      }
      ASSERT_TRUE(rd.ok()) << rd.status().ToString();
      const size_t expect = off >= r.size() ? 0 : std::min<size_t>(len, r.size() - off);
      ASSERT_EQ(rd.value(), expect) << what;
      ASSERT_TRUE(std::equal(buf.begin(), buf.begin() + static_cast<long>(expect),
                             r.begin() + static_cast<long>(std::min<uint64_t>(off, r.size()))))
          << what;
    } else if (op < 66) {  // sequential read of everything (read-ahead)
      what = "sequential read";
      std::vector<uint8_t> all;
      std::vector<uint8_t> buf(kChunk / 2 + 17);
      uint64_t off = 0;
      for (;;) {
        auto rd = f.Read(off, buf);
        ASSERT_TRUE(rd.ok()) << rd.status().ToString();
        if (rd.value() == 0) break;
        all.insert(all.end(), buf.begin(), buf.begin() + static_cast<long>(rd.value()));
        off += rd.value();
      }
      ASSERT_EQ(all, r);
    } else if (op < 76) {  // truncate
      const uint64_t sz = rng() % 2 ? rng() % kMax : rng() % (r.size() + 1);
      what = "truncate " + std::to_string(sz);
      ASSERT_TRUE(f.Truncate(sz).ok());
      r.resize(sz, 0);
    } else if (op < 81) {
      what = "sync";
      ASSERT_TRUE(f.Sync().ok());
    } else if (op < 87) {
      what = "writeout";
      ASSERT_TRUE(store.WriteOut(n).ok());
      ASSERT_FALSE(r.size() > 0 && store.Resident(n)) << what;
    } else if (op < 93) {
      what = "prefetch";
      ASSERT_TRUE(store.Prefetch(n).ok());
      if (alone && r.size() <= 4 * kChunk && store.stats().dirty_bytes == 0) {
        ASSERT_TRUE(store.Resident(n));
      }
    } else if (alone) {  // swap two files by renames (open handles follow)
      const std::string m = name(static_cast<int>(rng() % kFiles));
      if (m == n) continue;
      what = "rename " + n + " <-> " + m;
      const std::string tmp = prefix + "tmp";
      ASSERT_TRUE(store.Rename(n, tmp, true).ok());
      ASSERT_TRUE(store.Rename(m, n, false).ok());
      ASSERT_TRUE(store.Rename(tmp, m, true).ok());
      std::swap(open[n], open[m]);
      std::swap(ref[n], ref[m]);
    }
    ASSERT_EQ(open[n]->size(), ref[n].size()) << what << " at step " << step;
    auto st = store.Stat(n);
    ASSERT_TRUE(st.ok());
    ASSERT_EQ(st.value().size, ref[n].size()) << what;
    CheckStaging(store, o);
    if (step % 16 == 0) {
      for (auto& [fn, data] : ref) ASSERT_EQ(ReadAll(*open[fn]), data) << what << " " << fn;
    }
  }
  for (auto& [fn, data] : ref) ASSERT_EQ(ReadAll(*open[fn]), data) << fn;
}

TEST(SpillStore, RoundTripAndSparse) {
  TempDir t;
  auto o = SmallOptions(t.path());
  auto s = MustOpen(o);
  ASSERT_TRUE(s);
  auto f = MustOpenFile(*s, "a");
  std::vector<uint8_t> d(3 * kChunk + 5, 7);
  ASSERT_EQ(f->Write(2 * kChunk + 1, d).value(), d.size());
  EXPECT_EQ(f->size(), 5 * kChunk + 6);
  auto all = ReadAll(*f);
  ASSERT_EQ(all.size(), f->size());
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(all[i], i < 2 * kChunk + 1 ? 0 : 7) << i;
  }
  std::vector<uint8_t> tail(100);
  EXPECT_EQ(f->Read(f->size() - 10, tail).value(), 10u);
  EXPECT_EQ(f->Read(f->size(), tail).value(), 0u);
}

TEST(SpillStore, FsxSingleThread) {
  for (uint64_t seed : {1, 2, 3, 4}) {
    TempDir t;
    auto o = SmallOptions(t.path());
    o.compress = seed % 2 == 1;
    {
      auto s = MustOpen(o);
      ASSERT_TRUE(s);
      FsxRun(*s, o, seed, 600, "", true);
      if (HasFatalFailure()) return;
      EXPECT_GT(s->stats().ssd_write_bytes, 0u);
      EXPECT_GT(s->stats().ssd_read_bytes, 0u);
    }
  }
}

TEST(SpillStore, FsxThreads) {
  TempDir t;
  auto o = SmallOptions(t.path());
  o.staging_bytes = 16 * kChunk;
  auto s = MustOpen(o);
  ASSERT_TRUE(s);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(s->Mkdir("t" + std::to_string(i), 0755, getuid(), getgid()).code(), Code::kOk);
    threads.emplace_back([&, i] {
      FsxRun(*s, o, 100 + i, 300, "t" + std::to_string(i) + "/", false);
    });
  }
  for (auto& th : threads) th.join();
  CheckStaging(*s, o);
}

TEST(SpillStore, RestartKeepsSyncedFiles) {
  TempDir t;
  auto o = SmallOptions(t.path());
  std::mt19937_64 rng(7);
  std::map<std::string, std::vector<uint8_t>> ref;
  {
    auto s = MustOpen(o);
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->Mkdir("d", 0750, getuid(), getgid()).ok());
    for (const std::string n : {"x", "d/y", "d/z"}) {
      auto f = MustOpenFile(*s, n);
      auto d = MakeData(rng, 5 * kChunk + 333);
      ASSERT_TRUE(f->Write(0, d).ok());
      ASSERT_TRUE(f->Truncate(4 * kChunk + 1).ok());
      d.resize(4 * kChunk + 1);
      ASSERT_TRUE(f->Sync().ok());
      ref[n] = d;
    }
    // Destroyed without another Sync.
  }
  auto s = MustOpen(o);
  ASSERT_TRUE(s);
  uint64_t total = 0;
  for (auto& [n, d] : ref) {
    auto f = MustOpenFile(*s, n, false);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->size(), d.size());
    EXPECT_EQ(ReadAll(*f), d) << n;
    total += d.size();
  }
  EXPECT_EQ(s->stats().logical_bytes, total);
  EXPECT_EQ(s->stats().files, 3u);
  // Extending after the restart shows zeros, never the truncated bytes.
  auto f = MustOpenFile(*s, "x", false);
  ASSERT_TRUE(f->Truncate(6 * kChunk).ok());
  auto all = ReadAll(*f);
  for (size_t i = ref["x"].size(); i < all.size(); ++i) ASSERT_EQ(all[i], 0) << i;
}

// A child process writes and syncs, then dies without any cleanup.
void CrashChild(const SpillOptions& o, uint64_t seed, bool sigkill, bool overwrite_after_sync) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto r = SpillStore::Open(o);
    if (!r.ok()) _exit(3);
    auto s = std::move(r).value();
    auto f = s->OpenFile("c", true, false, false, 0600, getuid(), getgid());
    if (!f.ok()) _exit(4);
    std::mt19937_64 rng(seed);
    auto d = MakeData(rng, 20 * kChunk + 77);
    if (!f.value()->Write(0, d).ok() || !f.value()->Sync().ok()) _exit(5);
    if (overwrite_after_sync) {
      std::vector<uint8_t> junk(10 * kChunk, 0xAB);
      if (!f.value()->Write(kChunk, junk).ok()) _exit(6);
      (void)f.value()->Write(40 * kChunk, junk);  // may reach the disk or not
    }
    if (sigkill) kill(getpid(), SIGKILL);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  if (sigkill) {
    ASSERT_TRUE(WIFSIGNALED(status));
  } else {
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
  }
}

TEST(SpillStore, CrashAfterSync) {
  for (bool sigkill : {false, true}) {
    TempDir t;
    auto o = SmallOptions(t.path());
    CrashChild(o, 11, sigkill, false);
    if (HasFatalFailure()) return;
    auto s = MustOpen(o);
    ASSERT_TRUE(s);
    auto f = MustOpenFile(*s, "c", false);
    ASSERT_TRUE(f);
    std::mt19937_64 rng(11);
    auto d = MakeData(rng, 20 * kChunk + 77);
    EXPECT_EQ(f->size(), d.size());
    EXPECT_EQ(ReadAll(*f), d);
    EXPECT_EQ(s->stats().logical_bytes, d.size());
  }
}

TEST(SpillStore, CrashAfterUnsyncedOverwrite) {
  TempDir t;
  auto o = SmallOptions(t.path());
  CrashChild(o, 12, true, true);
  if (HasFatalFailure()) return;
  auto s = MustOpen(o);
  ASSERT_TRUE(s);
  auto f = MustOpenFile(*s, "c", false);
  ASSERT_TRUE(f);
  std::mt19937_64 rng(12);
  auto d = MakeData(rng, 20 * kChunk + 77);
  // The size is the synced one; each chunk is the synced bytes or the
  // overwrite, or (torn write) Corruption: never anything else.
  ASSERT_EQ(f->size(), d.size());
  for (uint64_t c = 0; c * kChunk < d.size(); ++c) {
    std::vector<uint8_t> buf(std::min<uint64_t>(kChunk, d.size() - c * kChunk));
    auto r = f->Read(c * kChunk, buf);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Code::kCorruption);
      continue;
    }
    ASSERT_EQ(r.value(), buf.size());
    const bool old = std::equal(buf.begin(), buf.end(), d.begin() + static_cast<long>(c * kChunk));
    const bool neu = c >= 1 && c <= 10 &&
                     std::all_of(buf.begin(), buf.end(), [](uint8_t b) { return b == 0xAB; });
    EXPECT_TRUE(old || neu) << "chunk " << c;
  }
  // Extending shows zeros past the synced end.
  ASSERT_TRUE(f->Truncate(50 * kChunk).ok());
  std::vector<uint8_t> buf(50 * kChunk - d.size());
  ASSERT_EQ(f->Read(d.size(), buf).value(), buf.size());
  EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](uint8_t b) { return b == 0; }));
}

TEST(SpillStore, CorruptionIsDetected) {
  TempDir t;
  auto o = SmallOptions(t.path());
  std::vector<uint8_t> d(4 * kChunk);
  std::mt19937_64 rng(5);
  for (auto& b : d) b = static_cast<uint8_t>(rng());
  {
    auto s = MustOpen(o);
    auto f = MustOpenFile(*s, "v");
    ASSERT_TRUE(f->Write(0, d).ok());
    ASSERT_TRUE(f->Sync().ok());
  }
  // Flip one stored byte of chunk 1.
  const std::string path = o.dir + "/v";
  int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const off_t off = 4096 + (4096 + kChunk) + 4096 + 100;  // chunk 1's stored byte 100
  uint8_t b = 0;
  ASSERT_EQ(pread(fd, &b, 1, off), 1);
  b ^= 0x40;
  ASSERT_EQ(pwrite(fd, &b, 1, off), 1);
  close(fd);
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "v", false);
  std::vector<uint8_t> buf(kChunk, 0);
  // Chunk 0 is fine.
  ASSERT_EQ(f->Read(0, buf).value(), kChunk);
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), d.begin()));
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::fill(buf.begin(), buf.end(), 0);
    auto r = f->Read(kChunk, buf);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kCorruption) << r.status().ToString();
    EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](uint8_t b) { return b == 0; }));
  }
  EXPECT_EQ(s->stats().checksum_errors, 2u);
  // A read that spans the bad chunk fails as a whole.
  std::vector<uint8_t> big(3 * kChunk);
  EXPECT_EQ(f->Read(0, big).status().code(), Code::kCorruption);
  // Chunk 3 is intact.
  ASSERT_EQ(f->Read(3 * kChunk, buf).value(), kChunk);
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), d.begin() + 3 * kChunk));
  // Overwriting the whole bad chunk repairs it (no read-modify-write).
  std::vector<uint8_t> fresh(kChunk, 9);
  ASSERT_TRUE(f->Write(kChunk, fresh).ok());
  ASSERT_TRUE(s->WriteOut("v").ok());
  ASSERT_EQ(f->Read(kChunk, buf).value(), kChunk);
  EXPECT_EQ(buf, fresh);
}

// A raw chunk loaded ahead has its checksum checked by the first use, on
// the thread that uses it: counted then, never handed out, whatever the use.
TEST(SpillStore, ChunkLoadedAheadIsCheckedWhenUsed) {
  TempDir t;
  auto o = SmallOptions(t.path());
  std::vector<uint8_t> d(4 * kChunk);
  std::mt19937_64 rng(11);
  for (auto& b : d) b = static_cast<uint8_t>(rng());
  {
    auto s = MustOpen(o);
    auto f = MustOpenFile(*s, "r");
    ASSERT_TRUE(f->Write(0, d).ok());
    ASSERT_TRUE(f->Sync().ok());
  }
  const std::string path = o.dir + "/r";
  int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const off_t off = 4096 + 2 * (4096 + kChunk) + 4096 + 7;  // chunk 2's stored byte 7
  uint8_t b = 0;
  ASSERT_EQ(pread(fd, &b, 1, off), 1);
  b ^= 0x01;
  ASSERT_EQ(pwrite(fd, &b, 1, off), 1);
  close(fd);
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "r", false);
  std::vector<uint8_t> buf(kChunk);
  ASSERT_EQ(f->Read(0, buf).value(), kChunk);  // sequential: chunks 1 and 2 loaded ahead
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), d.begin()));
  EXPECT_EQ(s->stats().checksum_errors, 0u);  // loaded, not used yet
  // A partial write needs the chunk's old bytes: refused, nothing changed.
  const std::vector<uint8_t> small(10, 3);
  EXPECT_EQ(f->Write(2 * kChunk + 100, small).status().code(), Code::kCorruption);
  EXPECT_EQ(s->stats().checksum_errors, 1u);
  EXPECT_EQ(f->size(), d.size());
  // Loaded again and checked again by a read.
  EXPECT_EQ(f->Read(2 * kChunk, buf).status().code(), Code::kCorruption);
  EXPECT_EQ(s->stats().checksum_errors, 2u);
  // Chunk 1 (loaded ahead too) and chunk 3 are intact.
  ASSERT_EQ(f->Read(kChunk, buf).value(), kChunk);
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), d.begin() + kChunk));
  ASSERT_EQ(f->Read(3 * kChunk, buf).value(), kChunk);
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), d.begin() + 3 * kChunk));
  // An overwrite of the whole chunk repairs it.
  const std::vector<uint8_t> fresh(kChunk, 4);
  ASSERT_TRUE(f->Write(2 * kChunk, fresh).ok());
  ASSERT_TRUE(s->WriteOut("r").ok());
  ASSERT_EQ(f->Read(2 * kChunk, buf).value(), kChunk);
  EXPECT_EQ(buf, fresh);
}

TEST(SpillStore, CorruptHeaderOfSecondChunk) {
  TempDir t;
  auto o = SmallOptions(t.path());
  std::vector<uint8_t> d(3 * kChunk, 0x5A);
  {
    auto s = MustOpen(o);
    auto f = MustOpenFile(*s, "h");
    ASSERT_TRUE(f->Write(0, d).ok());
    ASSERT_TRUE(f->Sync().ok());
  }
  int fd = open((o.dir + "/h").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const off_t hdr = 4096 + 2 * (4096 + kChunk) + 17;  // chunk 2's header
  uint8_t b = 0;
  ASSERT_EQ(pread(fd, &b, 1, hdr), 1);
  b ^= 1;
  ASSERT_EQ(pwrite(fd, &b, 1, hdr), 1);
  close(fd);
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "h", false);
  std::vector<uint8_t> buf(kChunk);
  EXPECT_EQ(f->Read(2 * kChunk, buf).status().code(), Code::kCorruption);
  EXPECT_EQ(s->stats().checksum_errors, 1u);
}

// A slot whose header was zeroed (a torn write, a zeroed sector) but whose
// bytes were not is damage, not a chunk never written: EIO, never zeros.
// (Found by tests/fuzz/fuzz_chunk: only the 64 header bytes were looked at.)
TEST(SpillStore, ZeroedHeaderOverDataIsCorruption) {
  TempDir t;
  auto o = SmallOptions(t.path());
  std::vector<uint8_t> d(3 * kChunk, 0x5A);
  {
    auto s = MustOpen(o);
    auto f = MustOpenFile(*s, "z");
    ASSERT_TRUE(f->Write(0, d).ok());
    ASSERT_TRUE(f->Sync().ok());
  }
  int fd = open((o.dir + "/z").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const std::vector<uint8_t> zeros(4096, 0);
  const off_t hdr = 4096 + 1 * (4096 + kChunk);  // chunk 1's header block
  ASSERT_EQ(pwrite(fd, zeros.data(), zeros.size(), hdr), 4096);
  close(fd);
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "z", false);
  std::vector<uint8_t> buf(kChunk);
  EXPECT_EQ(f->Read(kChunk, buf).status().code(), Code::kCorruption);
  ASSERT_EQ(f->Read(0, buf).value(), kChunk);  // the others are intact
  EXPECT_EQ(buf, std::vector<uint8_t>(kChunk, 0x5A));
}

TEST(SpillStore, CorruptCompressedChunk) {
  std::vector<uint8_t> zeros(kChunk, 0), enc;
  if (ZvcEncode(zeros, &enc) == ZvcMode::kRaw) GTEST_SKIP() << "codec without compression";
  TempDir t;
  auto o = SmallOptions(t.path());
  std::vector<uint8_t> d(2 * kChunk, 0);
  for (size_t i = 0; i < d.size(); i += 128) d[i] = static_cast<uint8_t>(i / 128 + 1);
  {
    auto s = MustOpen(o);
    auto f = MustOpenFile(*s, "zc");
    ASSERT_TRUE(f->Write(0, d).ok());
    ASSERT_TRUE(f->Sync().ok());
    EXPECT_EQ(s->stats().chunks_compressed, 2u);
  }
  int fd = open((o.dir + "/zc").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const off_t off = 4096 + 4096 + 3;  // chunk 0's bitmap
  uint8_t b = 0;
  ASSERT_EQ(pread(fd, &b, 1, off), 1);
  b ^= 0x10;
  ASSERT_EQ(pwrite(fd, &b, 1, off), 1);
  close(fd);
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "zc", false);
  std::vector<uint8_t> buf(kChunk);
  EXPECT_EQ(f->Read(0, buf).status().code(), Code::kCorruption);
  EXPECT_EQ(s->stats().checksum_errors, 1u);
  ASSERT_EQ(f->Read(kChunk, buf).value(), kChunk);
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), d.begin() + kChunk));
}

// --- Written slots never read as holes (the written-chunk index). ---

std::vector<uint8_t> RandomBytes(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> d(n);
  for (auto& b : d) b = static_cast<uint8_t>(rng());
  return d;
}

// Writes `chunks` (index → bytes, one chunk each) into a new file `rel` of
// `size` bytes, syncs and closes the store.
void WriteChunksAndClose(const SpillOptions& o, const std::string& rel,
                         const std::map<uint64_t, std::vector<uint8_t>>& chunks, uint64_t size) {
  auto s = MustOpen(o);
  ASSERT_TRUE(s);
  auto f = MustOpenFile(*s, rel);
  ASSERT_TRUE(f);
  for (const auto& [c, d] : chunks) ASSERT_TRUE(f->Write(c * kChunk, d).ok());
  ASSERT_TRUE(f->Truncate(size).ok());
  ASSERT_TRUE(f->Sync().ok());
}

void PwriteBacking(const SpillOptions& o, const std::string& rel, uint64_t off,
                   const std::vector<uint8_t>& bytes) {
  int fd = open((o.dir + "/" + rel).c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(off)),
            static_cast<ssize_t>(bytes.size()));
  close(fd);
}

bool AllZero(const std::vector<uint8_t>& b) {
  return std::all_of(b.begin(), b.end(), [](uint8_t x) { return x == 0; });
}

// A written slot zeroed on disk (header block and bytes) is Corruption, not a
// chunk never written; a hole still reads as zeros; a flipped byte is still
// Corruption. (Before, the zeroed slot read back as zeros with no error.)
TEST(SpillStore, ZeroedWrittenSlotIsCorruption) {
  TempDir t;
  auto o = SmallOptions(t.path());
  const auto d0 = RandomBytes(1, kChunk), d2 = RandomBytes(2, kChunk), d3 = RandomBytes(3, kChunk);
  // Chunk 1 is a hole, chunk 4 a hole at the end.
  WriteChunksAndClose(o, "w", {{0, d0}, {2, d2}, {3, d3}}, 5 * kChunk);
  if (HasFatalFailure()) return;
  PwriteBacking(o, "w", SlotOffset(2, kChunk), std::vector<uint8_t>(kBlock + kChunk, 0));
  std::vector<uint8_t> flip(1, 0);
  {
    int fd = open((o.dir + "/w").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pread(fd, flip.data(), 1, static_cast<off_t>(SlotOffset(3, kChunk) + kBlock + 7)), 1);
    close(fd);
    flip[0] ^= 0x20;
  }
  PwriteBacking(o, "w", SlotOffset(3, kChunk) + kBlock + 7, flip);
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "w", false);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->size(), 5 * kChunk);
  std::vector<uint8_t> buf(kChunk);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto r = f->Read(2 * kChunk, buf);
    ASSERT_FALSE(r.ok()) << "a zeroed written slot read as a hole";
    EXPECT_EQ(r.status().code(), Code::kCorruption) << r.status().ToString();
  }
  EXPECT_EQ(f->Read(3 * kChunk, buf).status().code(), Code::kCorruption);
  // A read spanning the lost chunk fails as a whole.
  std::vector<uint8_t> big(3 * kChunk);
  EXPECT_EQ(f->Read(kChunk, big).status().code(), Code::kCorruption);
  EXPECT_GE(s->stats().checksum_errors, 4u);  // and read-ahead's
  // The holes read as zeros, chunk 0 as written.
  std::fill(buf.begin(), buf.end(), 0xEE);
  ASSERT_EQ(f->Read(kChunk, buf).value(), kChunk);
  EXPECT_TRUE(AllZero(buf));
  std::fill(buf.begin(), buf.end(), 0xEE);
  ASSERT_EQ(f->Read(4 * kChunk, buf).value(), kChunk);
  EXPECT_TRUE(AllZero(buf));
  ASSERT_EQ(f->Read(0, buf).value(), kChunk);
  EXPECT_EQ(buf, d0);
  // Overwriting the whole lost chunk repairs it (even with a failed
  // read-ahead of it in staging, from the read at 0).
  ASSERT_TRUE(f->Write(2 * kChunk, d3).ok());
  ASSERT_TRUE(s->WriteOut("w").ok());
  ASSERT_EQ(f->Read(2 * kChunk, buf).value(), kChunk);
  EXPECT_EQ(buf, d3);
}

// Slots cut off by a truncated backing file are Corruption, whether the cut
// is at a slot's start or inside its header; the slots before read back.
// (Before, they read as zeros.)
TEST(SpillStore, TruncatedBackingFileIsCorruption) {
  for (uint64_t cut_in_slot : {uint64_t{0}, uint64_t{30}}) {
    TempDir t;
    auto o = SmallOptions(t.path());
    std::map<uint64_t, std::vector<uint8_t>> chunks;
    for (uint64_t c = 0; c < 4; ++c) chunks[c] = RandomBytes(10 + c, kChunk);
    WriteChunksAndClose(o, "t", chunks, 4 * kChunk);
    if (HasFatalFailure()) return;
    ASSERT_EQ(truncate((o.dir + "/t").c_str(), static_cast<off_t>(SlotOffset(2, kChunk) + cut_in_slot)), 0);
    auto s = MustOpen(o);
    auto f = MustOpenFile(*s, "t", false);
    ASSERT_TRUE(f);
    ASSERT_EQ(f->size(), 4 * kChunk);
    std::vector<uint8_t> buf(kChunk);
    for (uint64_t c : {2, 3}) {
      auto r = f->Read(c * kChunk, buf);
      ASSERT_FALSE(r.ok()) << "chunk " << c << " past the cut read as a hole";
      EXPECT_EQ(r.status().code(), Code::kCorruption) << r.status().ToString();
    }
    for (uint64_t c : {0, 1}) {
      ASSERT_EQ(f->Read(c * kChunk, buf).value(), kChunk);
      EXPECT_EQ(buf, chunks[c]) << c;
    }
    EXPECT_GE(s->stats().checksum_errors, 2u);
  }
}

// A chunk written as zeros (the codec stores it compressed, a run of zero
// values) and a hole both read as zeros, across a restart and without errors;
// zeroing the written one on disk is still Corruption.
TEST(SpillStore, WrittenZerosAndHolesReadAsZeros) {
  TempDir t;
  auto o = SmallOptions(t.path());
  WriteChunksAndClose(o, "z", {{1, std::vector<uint8_t>(kChunk, 0)}, {3, RandomBytes(4, 100)}},
                      6 * kChunk);
  if (HasFatalFailure()) return;
  {
    auto s = MustOpen(o);
    auto f = MustOpenFile(*s, "z", false);
    ASSERT_TRUE(f);
    auto all = ReadAll(*f);
    ASSERT_EQ(all.size(), 6 * kChunk);
    auto want = std::vector<uint8_t>(6 * kChunk, 0);
    auto d = RandomBytes(4, 100);
    std::copy(d.begin(), d.end(), want.begin() + 3 * kChunk);
    EXPECT_EQ(all, want);
    EXPECT_EQ(s->stats().checksum_errors, 0u);
  }
  PwriteBacking(o, "z", SlotOffset(1, kChunk), std::vector<uint8_t>(kBlock + kChunk, 0));
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "z", false);
  std::vector<uint8_t> buf(kChunk);
  EXPECT_EQ(f->Read(kChunk, buf).status().code(), Code::kCorruption);
  ASSERT_EQ(f->Read(2 * kChunk, buf).value(), kChunk);
  EXPECT_TRUE(AllZero(buf));
}

// A damaged index record makes its group's chunks count as written: the
// written ones still read back, the holes are Corruption (never zeros that
// might hide a lost chunk).
TEST(SpillStore, DamagedIndexRecordCountsChunksAsWritten) {
  TempDir t;
  auto o = SmallOptions(t.path());
  const auto d0 = RandomBytes(5, kChunk);
  WriteChunksAndClose(o, "i", {{0, d0}}, 2 * kChunk);
  if (HasFatalFailure()) return;
  PwriteBacking(o, "i", kIndexInHeader + 20, {0xFF});  // a byte of group 0's bitmap
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "i", false);
  ASSERT_TRUE(f);
  std::vector<uint8_t> buf(kChunk);
  ASSERT_EQ(f->Read(0, buf).value(), kChunk);
  EXPECT_EQ(buf, d0);
  EXPECT_EQ(f->Read(kChunk, buf).status().code(), Code::kCorruption);
}

// Past the first index group (chunk kIndexChunks on, index block before the
// group): holes read as zeros, a written chunk reads back, and zeroing its
// slot or the group's index block is Corruption. Sparse: about 40 KiB on disk.
TEST(SpillStore, SecondIndexGroup) {
  TempDir t;
  auto o = SmallOptions(t.path());
  const uint64_t c = kIndexChunks + 1;
  const auto d = RandomBytes(6, kChunk);
  WriteChunksAndClose(o, "g", {{0, RandomBytes(7, kChunk)}, {c, d}}, (c + 2) * kChunk);
  if (HasFatalFailure()) return;
  std::vector<uint8_t> buf(kChunk);
  {
    auto s = MustOpen(o);
    auto f = MustOpenFile(*s, "g", false);
    ASSERT_TRUE(f);
    ASSERT_EQ(f->Read(c * kChunk, buf).value(), kChunk);
    EXPECT_EQ(buf, d);
    for (uint64_t h : {c - 1, c + 1, uint64_t{5}}) {
      std::fill(buf.begin(), buf.end(), 0xEE);
      ASSERT_EQ(f->Read(h * kChunk, buf).value(), kChunk) << h;
      EXPECT_TRUE(AllZero(buf)) << h;
    }
  }
  PwriteBacking(o, "g", SlotOffset(c, kChunk), std::vector<uint8_t>(kBlock + kChunk, 0));
  {
    auto s = MustOpen(o);
    auto f = MustOpenFile(*s, "g", false);
    EXPECT_EQ(f->Read(c * kChunk, buf).status().code(), Code::kCorruption);
  }
  PwriteBacking(o, "g", IndexOffset(1, kChunk), std::vector<uint8_t>(kBlock, 0));
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "g", false);
  EXPECT_EQ(f->Read((c + 1) * kChunk, buf).status().code(), Code::kCorruption);
  ASSERT_EQ(f->Read(5 * kChunk, buf).value(), kChunk);  // group 0 is intact
  EXPECT_TRUE(AllZero(buf));
}

// A shrinking truncate records the new size and index before it cuts the
// slots: a process killed right after it reopens the file at its new size,
// and extending it shows zeros, not lost chunks.
TEST(SpillStore, KilledAfterShrinkingTruncate) {
  TempDir t;
  auto o = SmallOptions(t.path());
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto r = SpillStore::Open(o);
    if (!r.ok()) _exit(3);
    auto f = r.value()->OpenFile("k", true, false, false, 0600, getuid(), getgid());
    if (!f.ok()) _exit(4);
    std::vector<uint8_t> d(4 * kChunk, 0x33);
    if (!f.value()->Write(0, d).ok() || !f.value()->Sync().ok()) _exit(5);
    if (!f.value()->Truncate(kChunk).ok()) _exit(6);
    kill(getpid(), SIGKILL);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << WEXITSTATUS(status);
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "k", false);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->size(), kChunk);
  ASSERT_TRUE(f->Truncate(4 * kChunk).ok());
  auto all = ReadAll(*f);
  ASSERT_EQ(all.size(), 4 * kChunk);
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], i < kChunk ? 0x33 : 0) << i;
}

TEST(SpillStore, Quota) {
  TempDir t;
  auto o = SmallOptions(t.path());
  o.max_bytes = 100000;
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "q");
  std::vector<uint8_t> d(80000, 3);
  ASSERT_TRUE(f->Write(0, d).ok());
  std::vector<uint8_t> more(30000, 4);
  auto w = f->Write(75000, more);
  EXPECT_EQ(w.status().code(), Code::kNoSpace);
  EXPECT_EQ(f->size(), 80000u);
  EXPECT_EQ(ReadAll(*f), d);
  EXPECT_EQ(f->Truncate(100001).code(), Code::kNoSpace);
  EXPECT_EQ(f->size(), 80000u);
  auto g = MustOpenFile(*s, "g");
  EXPECT_EQ(g->Write(0, more).status().code(), Code::kNoSpace);
  EXPECT_EQ(g->size(), 0u);
  ASSERT_TRUE(g->Write(0, std::span<const uint8_t>(more.data(), 20000)).ok());
  EXPECT_EQ(s->stats().logical_bytes, 100000u);
  // Overwrites inside the file need no quota.
  ASSERT_TRUE(f->Write(0, std::span<const uint8_t>(more.data(), 1000)).ok());
  // Unlinked while open: the bytes stay counted until the last reference goes.
  ASSERT_TRUE(s->Unlink("q").ok());
  EXPECT_EQ(s->stats().logical_bytes, 100000u);
  EXPECT_EQ(ReadAll(*f).size(), 80000u);
  f.reset();
  EXPECT_EQ(s->stats().logical_bytes, 20000u);
  EXPECT_EQ(s->Stat("q").status().code(), Code::kNotFound);
  // Unlink of a file that is not open.
  ASSERT_TRUE(g->Sync().ok());
  g.reset();
  s.reset();
  s = MustOpen(o);
  EXPECT_EQ(s->stats().logical_bytes, 20000u);
  ASSERT_TRUE(s->Unlink("g").ok());
  EXPECT_EQ(s->stats().logical_bytes, 0u);
  EXPECT_EQ(s->stats().files, 0u);
  auto h = MustOpenFile(*s, "h");
  EXPECT_TRUE(h->Truncate(100000).ok());
}

// limits.spill_bytes_per_user: each uid other than 0 is bounded on its own,
// whatever the others hold; unlink, truncate and chown move the sums, and a
// reopened store rebuilds them from the headers.
TEST(SpillStore, QuotaPerUser) {
  TempDir t;
  auto o = SmallOptions(t.path());
  o.max_bytes_per_user = 100000;
  auto s = MustOpen(o);
  auto open_as = [&](const std::string& rel, uid_t uid) {
    auto r = s->OpenFile(rel, true, false, false, 0600, uid, uid);
    EXPECT_TRUE(r.ok()) << rel << ": " << r.status().ToString();
    return r.ok() ? r.value() : nullptr;
  };
  std::vector<uint8_t> d(60000, 7);
  auto a1 = open_as("a1", 1000);
  auto a2 = open_as("a2", 1000);
  ASSERT_TRUE(a1->Write(0, d).ok());
  EXPECT_EQ(a2->Write(0, d).status().code(), Code::kNoSpace);  // 120000 > 100000
  EXPECT_EQ(a2->size(), 0u);
  EXPECT_EQ(a2->Truncate(40001).code(), Code::kNoSpace);
  ASSERT_TRUE(a2->Truncate(40000).ok());                        // exactly the bound
  EXPECT_EQ(a2->Write(40000, std::span<const uint8_t>(d.data(), 1)).status().code(),
            Code::kNoSpace);
  // Another user, and root, are not charged for uid 1000's bytes.
  auto b = open_as("b", 1001);
  ASSERT_TRUE(b->Write(0, d).ok());
  auto r = open_as("r", 0);
  ASSERT_TRUE(r->Write(0, std::vector<uint8_t>(250000, 1)).ok());
  EXPECT_EQ(s->stats().logical_bytes, 60000u + 40000u + 60000u + 250000u);
  // Shrinking gives room back.
  ASSERT_TRUE(a1->Truncate(10000).ok());
  ASSERT_TRUE(a2->Write(40000, std::span<const uint8_t>(d.data(), 50000)).ok());
  EXPECT_EQ(a2->Write(90000, std::span<const uint8_t>(d.data(), 1)).status().code(),
            Code::kNoSpace);
  // A chown (root's) moves the file's bytes to its new owner.
  ASSERT_TRUE(a2->Sync().ok());
  a2.reset();
  ASSERT_TRUE(s->Chown("a2", 1001, 1001).ok());
  ASSERT_TRUE(a1->Write(10000, std::span<const uint8_t>(d.data(), 60000)).ok());
  EXPECT_EQ(b->Write(60000, std::span<const uint8_t>(d.data(), 1)).status().code(),
            Code::kNoSpace);  // 60000 + 90000 of uid 1001
  // Reopened: the sums come back from the headers.
  for (auto* f : {&a1, &b, &r}) {
    ASSERT_TRUE((*f)->Sync().ok());
    f->reset();
  }
  s.reset();
  s = MustOpen(o);
  auto a3 = open_as("a3", 1000);
  EXPECT_EQ(a3->Write(0, std::span<const uint8_t>(d.data(), 30001)).status().code(),
            Code::kNoSpace);  // uid 1000 holds 70000
  ASSERT_TRUE(a3->Write(0, std::span<const uint8_t>(d.data(), 30000)).ok());
  // Unlinking a closed file gives its owner's bytes back.
  ASSERT_TRUE(s->Unlink("a1").ok());
  ASSERT_TRUE(a3->Write(30000, std::span<const uint8_t>(d.data(), 60000)).ok());
  ASSERT_TRUE(s->Unlink("a2").ok());
  auto b2 = open_as("b2", 1001);
  ASSERT_TRUE(b2->Write(0, std::span<const uint8_t>(d.data(), 40000)).ok());
}

TEST(SpillStore, OwnershipAndMode) {
  TempDir t;
  auto o = SmallOptions(t.path());
  const bool root = geteuid() == 0;
  const uid_t uid = root ? 1234 : getuid();
  const gid_t gid = root ? 5678 : getgid();
  {
    auto s = MustOpen(o);
    ASSERT_TRUE(s->Mkdir("dir", 0710, uid, gid).ok());
    auto f = s->OpenFile("dir/file", true, true, false, 0640, uid, gid);
    ASSERT_TRUE(f.ok());
    auto st = s->Stat("dir/file");
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st.value().mode, S_IFREG | 0640u);
    EXPECT_EQ(st.value().uid, uid);
    EXPECT_EQ(st.value().gid, gid);
    EXPECT_FALSE(st.value().is_dir);
    auto sd = s->Stat("dir");
    ASSERT_TRUE(sd.ok());
    EXPECT_TRUE(sd.value().is_dir);
    EXPECT_EQ(sd.value().mode, S_IFDIR | 0710u);
    EXPECT_EQ(sd.value().uid, uid);
    if (root) {
      struct stat b {};
      ASSERT_EQ(stat((o.dir + "/dir/file").c_str(), &b), 0);
      EXPECT_EQ(b.st_uid, uid);
      EXPECT_EQ(b.st_gid, gid);
      ASSERT_EQ(stat((o.dir + "/dir").c_str(), &b), 0);
      EXPECT_EQ(b.st_uid, uid);
      EXPECT_EQ(b.st_gid, gid);
    }
    ASSERT_TRUE(s->Chmod("dir/file", 0600).ok());
    ASSERT_TRUE(f.value()->Sync().ok());
  }
  auto s = MustOpen(o);
  auto st = s->Stat("dir/file");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st.value().mode, S_IFREG | 0600u);
  EXPECT_EQ(st.value().uid, uid);
  EXPECT_EQ(st.value().gid, gid);
}

TEST(SpillStore, PrefetchWriteOutResident) {
  TempDir t;
  auto o = SmallOptions(t.path());
  o.staging_bytes = 16 * kChunk;
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "p");
  std::mt19937_64 rng(9);
  auto d = MakeData(rng, 6 * kChunk + 1);
  ASSERT_TRUE(f->Write(0, d).ok());
  EXPECT_TRUE(s->Resident("p"));
  EXPECT_GT(s->stats().dirty_bytes, 0u);
  ASSERT_TRUE(s->WriteOut("p").ok());
  EXPECT_FALSE(s->Resident("p"));
  EXPECT_EQ(s->stats().dirty_bytes, 0u);
  EXPECT_EQ(s->stats().staging_bytes, 0u);
  const uint64_t before = s->stats().ssd_read_bytes;
  ASSERT_TRUE(s->Prefetch("p").ok());
  EXPECT_TRUE(s->Resident("p"));
  EXPECT_GT(s->stats().ssd_read_bytes, before);
  // Served from staging: no SSD reads.
  const uint64_t after = s->stats().ssd_read_bytes;
  EXPECT_EQ(ReadAll(*f), d);
  EXPECT_EQ(s->stats().ssd_read_bytes, after);
  EXPECT_EQ(s->Prefetch("nope").code(), Code::kNotFound);
  auto e = MustOpenFile(*s, "empty");
  EXPECT_TRUE(s->Resident("empty"));
  EXPECT_FALSE(s->Resident("nope"));
}

TEST(SpillStore, Namespace) {
  TempDir t;
  auto o = SmallOptions(t.path());
  auto s = MustOpen(o);
  ASSERT_TRUE(s->Mkdir("a", 0755, getuid(), getgid()).ok());
  EXPECT_EQ(s->Mkdir("a", 0755, getuid(), getgid()).code(), Code::kExists);
  auto f = MustOpenFile(*s, "a/f");
  std::vector<uint8_t> d(kChunk + 3, 1);
  ASSERT_TRUE(f->Write(0, d).ok());
  EXPECT_EQ(s->OpenFile("a/f", true, true, false, 0644, 0, 0).status().code(), Code::kExists);
  EXPECT_EQ(s->OpenFile("a", false, false, false, 0, 0, 0).status().code(), Code::kIsDirectory);
  EXPECT_EQ(s->OpenFile("a/f/x", true, false, false, 0644, 0, 0).status().code(), Code::kNotDirectory);
  EXPECT_EQ(s->OpenFile("missing", false, false, false, 0, 0, 0).status().code(), Code::kNotFound);
  EXPECT_EQ(s->Unlink("a").code(), Code::kIsDirectory);
  EXPECT_EQ(s->Rmdir("a").code(), Code::kNotEmpty);
  // The same object for the same file.
  EXPECT_EQ(MustOpenFile(*s, "a/f", false).get(), f.get());
  // Renaming the directory: the open file follows.
  ASSERT_TRUE(s->Rename("a", "b", false).ok());
  EXPECT_EQ(MustOpenFile(*s, "b/f", false).get(), f.get());
  auto l = s->List("b");
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l.value().size(), 1u);
  EXPECT_EQ(l.value()[0].name, "f");
  auto root = s->List("");
  ASSERT_TRUE(root.ok());
  ASSERT_EQ(root.value().size(), 1u);
  EXPECT_TRUE(root.value()[0].is_dir);
  // Rename over an existing file replaces it; noreplace refuses.
  auto g = MustOpenFile(*s, "g");
  ASSERT_TRUE(g->Write(0, d).ok());
  EXPECT_EQ(s->Rename("g", "b/f", true).code(), Code::kExists);
  ASSERT_TRUE(s->Rename("g", "b/f", false).ok());
  EXPECT_EQ(ReadAll(*f), d);  // the replaced file is still readable through its handle
  EXPECT_EQ(s->stats().files, 2u);
  f.reset();
  EXPECT_EQ(s->stats().files, 1u);
  EXPECT_EQ(s->stats().logical_bytes, d.size());
  EXPECT_EQ(MustOpenFile(*s, "b/f", false).get(), g.get());
  // O_TRUNC.
  auto tr = s->OpenFile("b/f", true, false, true, 0644, getuid(), getgid());
  ASSERT_TRUE(tr.ok());
  EXPECT_EQ(g->size(), 0u);
  ASSERT_TRUE(s->Unlink("b/f").ok());
  ASSERT_TRUE(s->Rmdir("b").ok());
  EXPECT_EQ(s->Stat("b").status().code(), Code::kNotFound);
  EXPECT_TRUE(s->Stat("").value().is_dir);
}

TEST(SpillStore, CompressionCountsAndRoundTrips) {
  std::vector<uint8_t> zeros(kChunk, 0), enc;
  if (ZvcEncode(zeros, &enc) == ZvcMode::kRaw) GTEST_SKIP() << "codec without compression";
  TempDir t;
  auto o = SmallOptions(t.path());
  auto s = MustOpen(o);
  auto f = MustOpenFile(*s, "z");
  std::vector<uint8_t> d(8 * kChunk, 0);
  for (size_t i = 0; i < d.size(); i += 64) d[i] = static_cast<uint8_t>(i / 64 + 1);
  ASSERT_TRUE(f->Write(0, d).ok());
  ASSERT_TRUE(s->WriteOut("z").ok());
  const SpillStats st = s->stats();
  EXPECT_EQ(st.chunks_compressed, 8u);
  EXPECT_LT(st.stored_bytes, d.size() / 4);
  EXPECT_EQ(ReadAll(*f), d);
  // Random data is stored raw.
  std::mt19937_64 rng(1);
  std::vector<uint8_t> r(kChunk);
  for (auto& b : r) b = static_cast<uint8_t>(rng());
  ASSERT_TRUE(f->Write(0, r).ok());
  ASSERT_TRUE(s->WriteOut("z").ok());
  EXPECT_EQ(s->stats().chunks_raw, st.chunks_raw + 1);
}

TEST(SpillStore, RefusesBadOptions) {
  TempDir t;
  auto o = SmallOptions(t.path());
  o.chunk_bytes = 5000;
  EXPECT_EQ(SpillStore::Open(o).status().code(), Code::kInvalidArgument);
  o = SmallOptions(t.path());
  o.staging_bytes = kChunk;
  EXPECT_EQ(SpillStore::Open(o).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace epochfs::spill
