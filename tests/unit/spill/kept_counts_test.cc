// The zero-word counts a writer keeps while it copies into a staged chunk
// (staging.h: CopyIntoChunk, CountsFor), and the store's use of them: a
// sequential writer's chunks are written back with no counting pass of their
// own, other writes fall back to one, and either way the slot holds the
// right bytes in the right ZVC mode. The same for the checksum the writer
// keeps (SumFor): a raw chunk written in order is written back without a
// checksum pass, and the slot's checksum is verified when it is read back.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "epochfs/common/hash.h"
#include "epochfs/spill/spill_store.h"
#include "epochfs/spill/zvc.h"
#include "staging.h"
#include "temp_dir.h"

namespace epochfs::spill::kept_counts_test {

using Bytes = std::vector<uint8_t>;

// n bytes, each 4-byte word zero with probability 3/4 (like ReLU outputs).
Bytes Sparse(std::mt19937_64& rng, size_t n) {
  Bytes b(n, 0);
  for (size_t i = 0; i < n; i += 4) {
    if (rng() % 4 != 0) continue;
    for (size_t k = i; k < i + 4 && k < n; ++k) b[k] = static_cast<uint8_t>(1 + rng() % 255);
  }
  return b;
}

void ExpectCounts(const Entry& e, const Bytes& buf, uint32_t logical) {
  ZvcCounts got;
  ASSERT_TRUE(CountsFor(e, logical, &got)) << "logical " << logical;
  const ZvcCounts want = ZvcCount({buf.data(), logical});
  EXPECT_EQ(got.nz32, want.nz32) << "logical " << logical;
  EXPECT_EQ(got.nz16, want.nz16) << "logical " << logical;
}

TEST(KeptCounts, AlignedRunsUpwardsKeepExactCounts) {
  std::mt19937_64 rng(1);
  const Bytes src = Sparse(rng, 8192);
  Bytes buf(8192, 0);
  Entry e;
  CountsZeroed(&e);
  // Pieces at or past the counted end, on 4-byte boundaries, with a gap.
  CopyIntoChunk(&e, buf.data(), 8192, 0, {src.data(), 1000});
  CopyIntoChunk(&e, buf.data(), 8192, 1000, {src.data() + 1000, 2000});
  CopyIntoChunk(&e, buf.data(), 8192, 4000, {src.data() + 4000, 3000});
  ASSERT_TRUE(e.counts_ok);
  EXPECT_EQ(e.counted, 7000u);
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + 3000, buf.begin()));
  EXPECT_TRUE(std::equal(src.begin() + 4000, src.begin() + 7000, buf.begin() + 4000));
  ExpectCounts(e, buf, 7000);
  ExpectCounts(e, buf, 8192);  // past `counted` the buffer is zeros
  // A write from 0 over every counted byte replaces the counts.
  const Bytes other = Sparse(rng, 8192);
  CopyIntoChunk(&e, buf.data(), 8192, 0, {other.data(), 7200});
  ASSERT_TRUE(e.counts_ok);
  ExpectCounts(e, buf, 8192);
}

TEST(KeptCounts, OtherWritesDropTheCounts) {
  std::mt19937_64 rng(2);
  const Bytes src = Sparse(rng, 8192);
  Bytes buf(8192, 0);
  Entry e;
  CountsZeroed(&e);
  CopyIntoChunk(&e, buf.data(), 8192, 0, {src.data(), 4096});
  CopyIntoChunk(&e, buf.data(), 8192, 100, {src.data(), 8});  // below the counted end, not from 0
  EXPECT_FALSE(e.counts_ok);
  ZvcCounts c;
  EXPECT_FALSE(CountsFor(e, 8192, &c));
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + 8, buf.begin() + 100));

  CountsZeroed(&e);
  CopyIntoChunk(&e, buf.data(), 8192, 6, {src.data(), 8});  // not on a word boundary
  EXPECT_FALSE(e.counts_ok);

  // A run that ends inside a word: right for exactly that length, and it
  // cannot be extended.
  Bytes z(8192, 0);
  CountsZeroed(&e);
  CopyIntoChunk(&e, z.data(), 8192, 0, {src.data(), 4094});
  ASSERT_TRUE(e.counts_ok);
  ExpectCounts(e, z, 4094);
  EXPECT_FALSE(CountsFor(e, 4096, &c));
  CopyIntoChunk(&e, z.data(), 8192, 4096, {src.data(), 4});
  EXPECT_FALSE(e.counts_ok);

  // A buffer never known to be zeros (a loaded chunk) is counted only once a
  // write covers all of it.
  Entry loaded;
  CopyIntoChunk(&loaded, z.data(), 8192, 0, {src.data(), 8188});
  EXPECT_FALSE(loaded.counts_ok);
  EXPECT_FALSE(CountsFor(loaded, 8192, &c));
  CopyIntoChunk(&loaded, z.data(), 8192, 0, {src.data(), 8192});
  ASSERT_TRUE(loaded.counts_ok);
  ExpectCounts(loaded, z, 8192);
}

Bytes Random(std::mt19937_64& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

TEST(KeptSum, PiecesInOrderGiveTheChunksChecksum) {
  std::mt19937_64 rng(4);
  const Bytes src = Random(rng, 8192);
  Bytes buf(8192, 0);
  Entry e;
  CountsZeroed(&e);
  uint64_t got = 0;
  ASSERT_TRUE(SumFor(e, 0, &got));
  EXPECT_EQ(got, Checksum(buf.data(), 0));
  // Odd offsets and lengths: the counts give up, the checksum does not.
  CopyIntoChunk(&e, buf.data(), 8192, 0, {src.data(), 1001});
  CopyIntoChunk(&e, buf.data(), 8192, 1001, {src.data() + 1001, 3});
  CopyIntoChunk(&e, buf.data(), 8192, 1004, {src.data() + 1004, 5000});
  EXPECT_FALSE(e.counts_ok);
  ASSERT_TRUE(SumFor(e, 6004, &got));
  EXPECT_EQ(got, Checksum(buf.data(), 6004));
  EXPECT_FALSE(SumFor(e, 6005, &got));  // it covers exactly what was written
  EXPECT_FALSE(SumFor(e, 6003, &got));
  // A write from 0 over every summed byte restarts it.
  CopyIntoChunk(&e, buf.data(), 8192, 0, {src.data() + 7, 8000});
  ASSERT_TRUE(SumFor(e, 8000, &got));
  EXPECT_EQ(got, Checksum(buf.data(), 8000));
  // A whole chunk sets it, whatever came before.
  Entry loaded;
  CopyIntoChunk(&loaded, buf.data(), 8192, 0, {src.data(), 100});
  EXPECT_FALSE(SumFor(loaded, 100, &got));  // a buffer never known as zeros
  CopyIntoChunk(&loaded, buf.data(), 8192, 0, {src.data(), 8192});
  ASSERT_TRUE(SumFor(loaded, 8192, &got));
  EXPECT_EQ(got, Checksum(src.data(), 8192));
}

TEST(KeptSum, WritesOutOfOrderDropIt) {
  std::mt19937_64 rng(5);
  const Bytes src = Random(rng, 8192);
  Bytes buf(8192, 0);
  uint64_t got = 0;
  Entry e;
  CountsZeroed(&e);
  CopyIntoChunk(&e, buf.data(), 8192, 0, {src.data(), 4096});
  CopyIntoChunk(&e, buf.data(), 8192, 4100, {src.data(), 8});  // a gap
  EXPECT_FALSE(e.sum_ok);
  EXPECT_FALSE(SumFor(e, 4108, &got));
  CountsZeroed(&e);
  CopyIntoChunk(&e, buf.data(), 8192, 0, {src.data(), 4096});
  CopyIntoChunk(&e, buf.data(), 8192, 0, {src.data(), 100});  // from 0, not over all of it
  EXPECT_FALSE(e.sum_ok);
  CountsZeroed(&e);
  CopyIntoChunk(&e, buf.data(), 8192, 0, {src.data(), 4096});
  ForgetKept(&e);  // a truncate zeroed part of it
  EXPECT_FALSE(SumFor(e, 4096, &got));
  // Bytes that will be stored compressed: the slot's checksum is over the
  // encoded bytes, so none is kept (the counts are).
  const Bytes sparse = Sparse(rng, 8192);
  CountsZeroed(&e);
  CopyIntoChunk(&e, buf.data(), 8192, 0, {sparse.data(), 8192});
  EXPECT_TRUE(e.counts_ok);
  EXPECT_FALSE(SumFor(e, 8192, &got));
}

constexpr uint32_t kChunk = 16384;

SpillOptions Options(const std::string& dir) {
  SpillOptions o;
  o.dir = dir + "/spill";
  o.chunk_bytes = kChunk;
  o.staging_bytes = 64 * kChunk;
  o.queue_depth = 4;
  return o;
}

Bytes ReadBack(SpillFile& f) {
  Bytes out(f.size());
  size_t got = 0;
  while (got < out.size()) {
    auto r = f.Read(got, {out.data() + got, out.size() - got});
    if (!r.ok() || r.value() == 0) {
      ADD_FAILURE() << (r.ok() ? "short read" : r.status().ToString());
      break;
    }
    got += r.value();
  }
  return out;
}

TEST(KeptCounts, SequentialWriterNeedsNoCountingPass) {
  std::vector<uint8_t> zeros(kChunk, 0), enc;
  if (ZvcEncode(zeros, &enc) == ZvcMode::kRaw) GTEST_SKIP() << "codec without compression";
  testing::TempDir t;
  auto so = SpillStore::Open(Options(t.path()));
  ASSERT_TRUE(so.ok()) << so.status().ToString();
  SpillStore& s = *so.value();
  auto fo = s.OpenFile("seq", true, false, false, 0600, getuid(), getgid());
  ASSERT_TRUE(fo.ok());
  SpillFile& f = *fo.value();
  std::mt19937_64 rng(3);
  // 8 chunks in pieces of 1000 bytes (across chunk boundaries), then a
  // last piece of odd length: the file ends inside a word.
  Bytes data = Sparse(rng, 8 * kChunk + 5003);
  for (size_t at = 0; at < data.size(); at += 1000) {
    const size_t n = std::min<size_t>(1000, data.size() - at);
    ASSERT_TRUE(f.Write(at, {data.data() + at, n}).ok());
  }
  ASSERT_TRUE(s.WriteOut("seq").ok());
  SpillStats st = s.stats();
  EXPECT_EQ(st.count_passes, 0u);
  EXPECT_EQ(st.chunks_compressed, 9u);  // the last chunk too (5003 bytes, 3/4 zeros)
  EXPECT_EQ(ReadBack(f), data);  // loaded from the SSD: WriteOut dropped the chunks

  // A write inside a chunk read back from the SSD: the engine counts it.
  const Bytes patch = Sparse(rng, 301);
  std::copy(patch.begin(), patch.end(), data.begin() + kChunk + 3);
  ASSERT_TRUE(f.Write(kChunk + 3, patch).ok());
  ASSERT_TRUE(s.WriteOut("seq").ok());
  EXPECT_EQ(s.stats().count_passes, 1u);
  EXPECT_EQ(s.stats().chunks_compressed, 10u);
  EXPECT_EQ(ReadBack(f), data);

  // Whole chunks rewritten from their start (new counts replace the old).
  for (uint64_t c = 2; c < 4; ++c) {
    const Bytes fresh = Sparse(rng, kChunk);
    std::copy(fresh.begin(), fresh.end(), data.begin() + static_cast<ptrdiff_t>(c * kChunk));
    ASSERT_TRUE(f.Write(c * kChunk, fresh).ok());
  }
  ASSERT_TRUE(s.WriteOut("seq").ok());
  EXPECT_EQ(s.stats().count_passes, 1u);
  EXPECT_EQ(s.stats().chunks_compressed, 12u);
  EXPECT_EQ(ReadBack(f), data);
}

TEST(KeptSum, SequentialRawWriterNeedsNoChecksumPass) {
  testing::TempDir t;
  auto so = SpillStore::Open(Options(t.path()));
  ASSERT_TRUE(so.ok()) << so.status().ToString();
  SpillStore& s = *so.value();
  auto fo = s.OpenFile("raw", true, false, false, 0600, getuid(), getgid());
  ASSERT_TRUE(fo.ok());
  SpillFile& f = *fo.value();
  std::mt19937_64 rng(6);
  // 6 chunks of incompressible bytes in pieces of 999 (odd offsets, across
  // chunk boundaries), the last chunk short.
  Bytes data = Random(rng, 6 * kChunk + 777);
  for (size_t at = 0; at < data.size(); at += 999) {
    const size_t n = std::min<size_t>(999, data.size() - at);
    ASSERT_TRUE(f.Write(at, {data.data() + at, n}).ok());
  }
  ASSERT_TRUE(s.WriteOut("raw").ok());
  EXPECT_EQ(s.stats().chunks_raw, 7u);
  EXPECT_EQ(s.stats().checksum_passes, 0u);
  // Read back from the SSD: every slot's checksum is verified against the
  // bytes (a wrong kept checksum would be Corruption here).
  EXPECT_EQ(ReadBack(f), data);
  EXPECT_EQ(s.stats().checksum_errors, 0u);

  // A patch inside a loaded chunk: that chunk is checksummed by the engine.
  const Bytes patch = Random(rng, 300);
  std::copy(patch.begin(), patch.end(), data.begin() + 2 * kChunk + 11);
  ASSERT_TRUE(f.Write(2 * kChunk + 11, patch).ok());
  ASSERT_TRUE(s.WriteOut("raw").ok());
  EXPECT_EQ(s.stats().checksum_passes, 1u);
  EXPECT_EQ(ReadBack(f), data);

  // A shrinking truncate inside the last chunk, then an append: the tail
  // chunk's kept checksum was dropped, its write-back computes one.
  ASSERT_TRUE(f.Truncate(5 * kChunk + 100).ok());
  data.resize(5 * kChunk + 100);
  const Bytes more = Random(rng, 50);
  ASSERT_TRUE(f.Write(data.size(), more).ok());
  data.insert(data.end(), more.begin(), more.end());
  ASSERT_TRUE(s.WriteOut("raw").ok());
  EXPECT_EQ(s.stats().checksum_passes, 2u);
  EXPECT_EQ(ReadBack(f), data);
  EXPECT_EQ(s.stats().checksum_errors, 0u);
}

}  // namespace epochfs::spill::kept_counts_test
