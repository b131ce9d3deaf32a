// Refill reads (src/fs/refill_reader.h): the blocks that hold a READ, and
// a READ of pages the kernel lost of a handed-over file, read back from a
// real LOWER directory only in those blocks, each once per open.
#include "refill_reader.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "epochfs/cache/policy.h"
#include "epochfs/store/lower.h"

namespace epochfs::fs {
namespace refill_reader_test {

TEST(BlocksCovering, TheBlocksThatHoldARead) {
  EXPECT_EQ(BlocksCovering(0, 1, 100, 10), (BlockSpan{0, 1}));
  EXPECT_EQ(BlocksCovering(0, 10, 100, 10), (BlockSpan{0, 1}));
  EXPECT_EQ(BlocksCovering(9, 2, 100, 10), (BlockSpan{0, 2}));
  EXPECT_EQ(BlocksCovering(35, 30, 100, 10), (BlockSpan{3, 4}));  // [35, 65): 3..6
  EXPECT_EQ(BlocksCovering(95, 50, 100, 10), (BlockSpan{9, 1})) << "cut at the end";
  EXPECT_EQ(BlocksCovering(0, 1000, 95, 10), (BlockSpan{0, 10})) << "a short last block";
  EXPECT_EQ(BlocksCovering(100, 10, 100, 10), (BlockSpan{})) << "at the end";
  EXPECT_EQ(BlocksCovering(5, 0, 100, 10), (BlockSpan{})) << "nothing asked";
  EXPECT_EQ(BlocksCovering(5, 10, 100, 0), (BlockSpan{})) << "no blocks";
}

class Dir {
 public:
  Dir() {
    char tmpl[] = "/tmp/epochfs-refill-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~Dir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& rel, size_t size, unsigned seed) {
    std::string data(size, '\0');
    std::mt19937 rng(seed);
    for (char& c : data) c = static_cast<char>(rng());
    std::ofstream(path_ + "/" + rel, std::ios::binary).write(data.data(), data.size());
    return data;
  }

 private:
  std::string path_;
};

std::string Joined(const std::vector<BlockSlice>& pieces) {
  std::string out;
  for (const BlockSlice& p : pieces) out.append(p.data, p.len);
  return out;
}

// 10000 bytes in blocks of 4096 (the last of 1808), loaded, handed over.
struct Handed {
  Dir dir;
  std::unique_ptr<store::Lower> lower;
  std::unique_ptr<store::CacheFront> cache;
  std::string want;
  store::ObjectRef stub;
  OpenFile f;
  Handed() {
    want = dir.Write("shard", 10000, 5);
    lower = std::move(store::Lower::Open(dir.path())).value();
    cache = std::make_unique<store::CacheFront>(*lower, cache::MakeLruPolicy(1 << 20), 1 << 20);
    struct stat st;
    EXPECT_EQ(::stat((dir.path() + "/shard").c_str(), &st), 0);
    auto got = cache->Get({7, "shard", store::VersionRule().Of(st)});
    EXPECT_TRUE(got.ok());
    EXPECT_TRUE(cache->HandOver(got.value(), 4096));
    // The open the kernel serves from its pages: a hit.
    stub = cache->HitHandedOver({7, "shard", store::VersionRule().Of(st)});
    EXPECT_TRUE(stub);
    f.kind = OpenFile::Kind::kObject;
    f.path = "shard";
    f.object = stub;
  }
};

TEST(RefillRead, ReadsOnlyTheBlocksAskedForEachOncePerOpen) {
  Handed h;
  ASSERT_TRUE(RefillsInBlocks(h.stub));
  EXPECT_EQ(h.stub->block_sums.size(), 3u);
  auto r = RefillRead(*h.cache, h.f, h.stub, 5000, 3000);  // blocks 0 and 1
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Joined(r.value()), h.want.substr(3000, 5000));
  store::CacheCounters c = h.cache->counters();
  EXPECT_EQ(c.bytes_read_lower, 10000u + 2 * 4096);
  EXPECT_EQ(c.refill_bytes, 2u * 4096);
  EXPECT_EQ(c.refills, 1u);
  EXPECT_EQ(c.hits, 0u) << "the open's hit was a refill";
  EXPECT_EQ(c.hits + c.misses + c.coalesced + c.refills, 2u) << "two opens, each counted once";
  // Block 1 is the one the open keeps: read again from it.
  r = RefillRead(*h.cache, h.f, h.stub, 100, 4500);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Joined(r.value()), h.want.substr(4500, 100));
  EXPECT_EQ(h.cache->counters().bytes_read_lower, 10000u + 2 * 4096);
  // The short last block; past the end, nothing.
  r = RefillRead(*h.cache, h.f, h.stub, 1 << 20, 9000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Joined(r.value()), h.want.substr(9000));
  r = RefillRead(*h.cache, h.f, h.stub, 10, 10000);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().empty());
  c = h.cache->counters();
  EXPECT_EQ(c.refill_bytes, 2u * 4096 + 1808);
  EXPECT_EQ(c.refills, 1u) << "one read of the open";
  // The stub stays handed over: the RAM tier holds no bytes of it.
  EXPECT_EQ(h.cache->ram().Find(7), h.stub);
  EXPECT_EQ(h.cache->ram().handed_bytes(), 10000u);
}

// The kernel's READs of lost pages come several at once (read-ahead), and a
// little out of order around a block's end: each block is read once.
TEST(RefillRead, ConcurrentAndOutOfOrderReadsOfOneOpenReadEachBlockOnce) {
  Handed h;
  std::vector<std::thread> readers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t) {
    readers.emplace_back([&h, &bad, t] {
      const uint64_t off = 8192 + 100 * static_cast<uint64_t>(t);
      auto r = RefillRead(*h.cache, h.f, h.stub, 100, off);
      if (!r.ok() || Joined(r.value()) != h.want.substr(off, 100)) ++bad;
    });
  }
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(h.cache->counters().refill_bytes, 1808u) << "block 2, once";
  // Blocks 1, then 2 again and 1 again: the open keeps the last two.
  ASSERT_TRUE(RefillRead(*h.cache, h.f, h.stub, 10, 4096).ok());
  ASSERT_TRUE(RefillRead(*h.cache, h.f, h.stub, 10, 9000).ok());
  ASSERT_TRUE(RefillRead(*h.cache, h.f, h.stub, 10, 5000).ok());
  EXPECT_EQ(h.cache->counters().refill_bytes, 1808u + 4096);
  ASSERT_TRUE(RefillRead(*h.cache, h.f, h.stub, 10, 0).ok());  // block 0: 2 goes
  ASSERT_TRUE(RefillRead(*h.cache, h.f, h.stub, 10, 9000).ok());
  store::CacheCounters c = h.cache->counters();
  EXPECT_EQ(c.refill_bytes, 2 * 1808u + 2 * 4096);
  EXPECT_EQ(c.refills, 1u);
  EXPECT_EQ(c.hits, 0u) << "the open's hit was made a refill once";
}

TEST(RefillRead, ABlockOfOtherBytesIsStaleTheOthersAreServed) {
  Handed h;
  std::string changed = h.want;
  changed[5000] = static_cast<char>(~changed[5000]);
  std::ofstream(h.dir.path() + "/shard", std::ios::binary).write(changed.data(), changed.size());
  auto r = RefillRead(*h.cache, h.f, h.stub, 100, 0);
  ASSERT_TRUE(r.ok()) << "block 0 is the bytes handed over";
  EXPECT_EQ(Joined(r.value()), h.want.substr(0, 100));
  r = RefillRead(*h.cache, h.f, h.stub, 100, 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kStale);
  // Another size: Stale before a byte is read.
  std::ofstream(h.dir.path() + "/shard", std::ios::binary).write(h.want.data(), 9999);
  const uint64_t read = h.cache->counters().bytes_read_lower;
  r = RefillRead(*h.cache, h.f, h.stub, 100, 8192);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kStale);
  EXPECT_EQ(h.cache->counters().bytes_read_lower, read);
}

TEST(RefillRead, ASmallFileOrNoBlockSizeKeepsNoSums) {
  Handed h;
  EXPECT_TRUE(store::RefillSums("abc", 3, 4).empty()) << "one block: the whole checksum";
  EXPECT_TRUE(store::RefillSums(h.want.data(), h.want.size(), 0).empty());
  const auto sums = store::RefillSums(h.want.data(), h.want.size(), 4096);
  ASSERT_EQ(sums.size(), 3u);
  EXPECT_EQ(sums, h.stub->block_sums);
  EXPECT_NE(sums[0], sums[1]);
  auto got = h.cache->RefillBlock({7, "shard", h.stub->version}, h.stub, 3, true);
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument) << "past the last block";
}

}  // namespace refill_reader_test
}  // namespace epochfs::fs
