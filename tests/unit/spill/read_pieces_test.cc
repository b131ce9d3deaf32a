// SpillFile::ReadPieces: the bytes Read gives, handed over as pieces of the
// staged chunks (no copy): the same bytes everywhere (holes, chunk
// boundaries, the end of the file, chunks loaded from the SSD), one piece per
// chunk, one call per request; a request over more chunks than one reader
// may pin is copied into one piece; an error calls nothing; neither an error
// nor a consumer that throws leaves a chunk pinned; a write to the file
// waits until the pieces are consumed.
// (The randomized workloads in spill_store_test.cc read through it too.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "epochfs/spill/spill_store.h"
#include "temp_dir.h"

namespace epochfs::spill::read_pieces_test {

constexpr uint32_t kChunk = 8192;
using Bytes = std::vector<uint8_t>;

SpillOptions Options(const std::string& dir) {
  SpillOptions o;
  o.dir = dir + "/spill";
  o.chunk_bytes = kChunk;
  o.staging_bytes = 8 * kChunk;  // one reader may pin 4 chunks
  o.queue_depth = 4;
  o.readahead_chunks = 2;
  return o;
}

struct Got {
  Status status;
  int calls = 0;
  std::vector<size_t> sizes;  // of each piece
  Bytes bytes;
};

Got Pieces(SpillFile& f, uint64_t off, size_t len) {
  Got g;
  g.status = f.ReadPieces(off, len, [&](std::span<const struct iovec> pieces) {
    ++g.calls;
    for (const auto& p : pieces) {
      g.sizes.push_back(p.iov_len);
      const auto* b = static_cast<const uint8_t*>(p.iov_base);
      g.bytes.insert(g.bytes.end(), b, b + p.iov_len);
    }
  });
  return g;
}

std::shared_ptr<SpillFile> MakeFile(SpillStore& s, const std::string& rel) {
  auto r = s.OpenFile(rel, true, false, false, 0644, getuid(), getgid());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r.value() : nullptr;
}

TEST(ReadPieces, SameBytesAsReadOnePiecePerChunk) {
  testing::TempDir t;
  const auto o = Options(t.path());
  auto so = SpillStore::Open(o);
  ASSERT_TRUE(so.ok()) << so.status().ToString();
  auto& s = *so.value();
  auto f = MakeFile(s, "a");
  ASSERT_TRUE(f);
  // Chunks 0-1 a hole, data from an odd offset in chunk 2 to the middle of
  // chunk 9, random in some chunks and mostly zeros in others.
  std::mt19937_64 rng(7);
  Bytes d(7 * kChunk + 3001);
  for (size_t i = 0; i < d.size(); ++i) {
    d[i] = (i / kChunk) % 2 ? static_cast<uint8_t>(rng()) : (i % 97 == 0 ? 5 : 0);
  }
  const uint64_t at = 2 * kChunk + 17;
  ASSERT_EQ(f->Write(at, d).value(), d.size());
  ASSERT_TRUE(s.WriteOut("a").ok());  // reads below load from the SSD
  const uint64_t size = f->size();
  ASSERT_EQ(size, at + d.size());
  const uint64_t cases[][2] = {{0, kChunk},           {0, 2 * kChunk + 100},
                               {at - 5, 10},          {kChunk - 1, 2},
                               {3 * kChunk + 9, 4 * kChunk - 18},  // 4 chunks: the most one reader pins
                               {size - 100, 100},     {size - 100, 5000},
                               {size, 10},            {size + kChunk, 10},
                               {5 * kChunk, 0},       {1, 6 * kChunk}};  // 7 chunks: copied
  for (const auto& c : cases) {
    const uint64_t off = c[0];
    const size_t len = c[1];
    SCOPED_TRACE("read " + std::to_string(off) + "+" + std::to_string(len));
    Bytes want(len);
    auto r = f->Read(off, want);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    want.resize(r.value());
    const Got g = Pieces(*f, off, len);
    ASSERT_TRUE(g.status.ok()) << g.status.ToString();
    EXPECT_EQ(g.calls, 1);
    EXPECT_EQ(g.bytes, want);
    if (want.empty()) {
      EXPECT_TRUE(g.sizes.empty());
      continue;
    }
    const uint64_t chunks = (off + want.size() - 1) / kChunk - off / kChunk + 1;
    if (chunks <= 4) {
      EXPECT_EQ(g.sizes.size(), chunks);  // each piece is a staged chunk's
    } else {
      EXPECT_EQ(g.sizes.size(), 1u);  // copied
    }
    for (size_t n : g.sizes) EXPECT_GT(n, 0u);
  }
  // A sequential reader through pieces gets the whole file.
  Bytes all;
  for (uint64_t off = 0;;) {
    const Got g = Pieces(*f, off, 3 * kChunk - 5);
    ASSERT_TRUE(g.status.ok()) << g.status.ToString();
    if (g.bytes.empty()) break;
    all.insert(all.end(), g.bytes.begin(), g.bytes.end());
    off += g.bytes.size();
  }
  Bytes want(at, 0);
  want.insert(want.end(), d.begin(), d.end());
  EXPECT_EQ(all, want);
}

TEST(ReadPieces, ErrorCallsNothingAndUnpins) {
  testing::TempDir t;
  const auto o = Options(t.path());
  Bytes d(4 * kChunk);
  std::mt19937_64 rng(9);
  for (auto& b : d) b = static_cast<uint8_t>(rng());
  {
    auto so = SpillStore::Open(o);
    ASSERT_TRUE(so.ok()) << so.status().ToString();
    auto f = MakeFile(*so.value(), "v");
    ASSERT_TRUE(f);
    ASSERT_TRUE(f->Write(0, d).ok());
    ASSERT_TRUE(f->Sync().ok());
  }
  // Flip stored byte 100 of chunk 1 (slot 1: after the header block and
  // slot 0, its own header block first).
  const int fd = open((o.dir + "/v").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const off_t off = 4096 + (4096 + kChunk) + 4096 + 100;
  uint8_t b = 0;
  ASSERT_EQ(pread(fd, &b, 1, off), 1);
  b ^= 0x10;
  ASSERT_EQ(pwrite(fd, &b, 1, off), 1);
  close(fd);
  auto so = SpillStore::Open(o);
  ASSERT_TRUE(so.ok()) << so.status().ToString();
  auto f = MakeFile(*so.value(), "v");
  ASSERT_TRUE(f);
  // Many times over: a chunk or a reader's pin share left behind by a
  // failed request would soon leave nothing to pin (the test would hang).
  for (int i = 0; i < 20; ++i) {
    const Got bad = Pieces(*f, 0, 3 * kChunk);
    EXPECT_EQ(bad.status.code(), Code::kCorruption) << bad.status.ToString();
    EXPECT_EQ(bad.calls, 0);
    const Got good = Pieces(*f, 2 * kChunk, 2 * kChunk);
    ASSERT_TRUE(good.status.ok()) << good.status.ToString();
    EXPECT_EQ(good.bytes, Bytes(d.begin() + 2 * kChunk, d.end()));
  }
  EXPECT_EQ(so.value()->stats().checksum_errors, 20u);
  ASSERT_TRUE(f->Truncate(0).ok());  // waits for every pin of the file to go
}

TEST(ReadPieces, ConsumerThatThrowsLeavesNoPin) {
  testing::TempDir t;
  const auto o = Options(t.path());
  auto so = SpillStore::Open(o);
  ASSERT_TRUE(so.ok()) << so.status().ToString();
  auto f = MakeFile(*so.value(), "x");
  ASSERT_TRUE(f);
  const Bytes d(4 * kChunk, 6);
  ASSERT_TRUE(f->Write(0, d).ok());
  // Each call pins the 4 chunks one reader may: a pin left behind would
  // block the next call for good.
  for (int i = 0; i < 10; ++i) {
    EXPECT_THROW((void)f->ReadPieces(0, d.size(),
                                     [](std::span<const struct iovec>) { throw std::runtime_error("x"); }),
                 std::runtime_error);
  }
  EXPECT_EQ(Pieces(*f, 0, d.size()).bytes, d);
  ASSERT_TRUE(f->Truncate(0).ok());  // waits for every pin of the file to go
}

TEST(ReadPieces, WriteWaitsUntilPiecesAreConsumed) {
  testing::TempDir t;
  const auto o = Options(t.path());
  auto so = SpillStore::Open(o);
  ASSERT_TRUE(so.ok()) << so.status().ToString();
  auto f = MakeFile(*so.value(), "w");
  ASSERT_TRUE(f);
  const Bytes old(2 * kChunk, 1);
  ASSERT_TRUE(f->Write(0, old).ok());
  std::atomic<bool> written{false};
  std::thread writer;
  Bytes seen;
  const Status st = f->ReadPieces(0, old.size(), [&](std::span<const struct iovec> pieces) {
    writer = std::thread([&] {
      const Bytes fresh(old.size(), 2);
      EXPECT_TRUE(f->Write(0, fresh).ok());
      written = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(written.load());
    for (const auto& p : pieces) {
      const auto* b = static_cast<const uint8_t*>(p.iov_base);
      seen.insert(seen.end(), b, b + p.iov_len);
    }
  });
  writer.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(seen, old);
  EXPECT_TRUE(written.load());
  const Got after = Pieces(*f, 0, old.size());
  EXPECT_EQ(after.bytes, Bytes(old.size(), 2));
}

}  // namespace epochfs::spill::read_pieces_test
