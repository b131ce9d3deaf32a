// The disk tier's O_DIRECT reads (disk_tier.h, direct_buffers.h): object
// files of every size around the alignment and the block read back byte for
// byte through reused buffers (a small file after a large one gets none of
// the large one's bytes), files above the direct bound read buffered, a file
// cut short by one byte never served; the same with O_DIRECT turned off; and
// the buffer pool's bounds.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../spill/temp_dir.h"
#include "epochfs/tier/direct_buffers.h"
#include "epochfs/tier/disk_format.h"
#include "epochfs/tier/disk_tier.h"

namespace epochfs::tier {
// Named, not anonymous: a unity build compiles this file with the others of its binary.
namespace disk_tier_direct_test {

using spill::testing::TempDir;

store::LowerKey Key(const std::string& rel, uint64_t size) {
  store::LowerKey k;
  k.rel = rel;
  k.version = store::Version{size, 11, 0, 42};
  return k;
}

store::ObjectRef Obj(const store::LowerKey& k, uint64_t size, char seed) {
  auto o = std::make_shared<store::Object>();
  o->id = k.Id();
  o->data.resize(size);
  for (uint64_t i = 0; i < size; ++i) o->data[i] = static_cast<char>(seed + i * 13 + i / 4099);
  return o;
}

store::Version V(const store::LowerKey& k) { return k.version; }

// Whether files in dir can be opened with O_DIRECT (tmpfs before Linux 6.6
// cannot: the tier reads buffered there).
bool TakesDirect(const std::string& dir) {
  const std::string p = dir + "/probe";
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_DIRECT, 0600);
  if (fd >= 0) ::close(fd);
  ::unlink(p.c_str());
  return fd >= 0;
}

// Reads with O_DIRECT where the directory takes it when `allow`, buffered
// otherwise: the same bytes either way.
void EverySize(bool allow) {
  TempDir dir("epochfs-tier-direct-test");
  ASSERT_FALSE(dir.path().empty());
  const bool direct = allow && TakesDirect(dir.path());
  DiskTierOptions o;
  o.path = dir.path();
  o.size = 64 << 20;
  o.direct_reads = allow;
  auto opened = DiskTier::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  std::unique_ptr<DiskTier> t = std::move(opened).value();
  ASSERT_TRUE(t->Start().ok());

  // Sizes whose whole file (header, data, sums) falls just below, on and just
  // above a 4 KiB boundary, around a 64 KiB block, and above the direct bound.
  const std::string rel = "d/file-";
  std::vector<uint64_t> sizes;
  const uint64_t fixed = HeaderBytes(Key(rel + "00", 1));
  for (uint64_t file : {uint64_t{4096}, uint64_t{8192}}) {
    for (uint64_t d : {file - fixed - 8 - 1, file - fixed - 8, file - fixed - 8 + 1}) {
      sizes.push_back(d);
    }
  }
  for (uint64_t s : {uint64_t{1}, uint64_t{65536}, uint64_t{65537}, uint64_t{777777},
                     uint64_t{DiskTier::kDirectMaxBytes}}) {
    sizes.push_back(s);
  }
  std::vector<store::LowerKey> keys;
  std::vector<store::ObjectRef> objs;
  uint64_t small = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string name = (i < 10 ? "0" : "") + std::to_string(i);
    keys.push_back(Key(rel + name, sizes[i]));
    ASSERT_EQ(HeaderBytes(keys.back()), fixed);
    objs.push_back(Obj(keys.back(), sizes[i], static_cast<char>(i * 5 + 1)));
    ASSERT_TRUE(t->Write(keys[i].Id(), keys[i], objs[i]));
    if (fixed + sizes[i] + SumsBytes(sizes[i]) <= DiskTier::kDirectMaxBytes) ++small;
  }
  t->Drain();
  ASSERT_EQ(t->stats().objects, sizes.size());
  // Twice, largest first the second time: each read reuses a buffer a larger
  // file filled before it.
  for (int round = 0; round < 2; ++round) {
    for (size_t n = 0; n < sizes.size(); ++n) {
      const size_t i = round == 0 ? n : sizes.size() - 1 - n;
      store::ObjectRef back = t->Read(keys[i].Id(), keys[i], V(keys[i]));
      ASSERT_NE(back, nullptr) << "size " << sizes[i];
      ASSERT_EQ(back->data.size(), sizes[i]);
      EXPECT_TRUE(back->data == objs[i]->data) << "size " << sizes[i];
      EXPECT_EQ(back->checksum, store::ObjectChecksum(objs[i]->data.data(), sizes[i]));
    }
  }
  EXPECT_EQ(t->stats().checksum_errors, 0u);
  EXPECT_EQ(t->stats().hits, 2 * sizes.size());
  // Every file up to the bound read direct where the filesystem takes it; the
  // one above it buffered.
  EXPECT_EQ(t->direct_reads(), direct ? 2 * small : 0u);
  EXPECT_LT(small, sizes.size());

  // A file cut short by the last byte of its sums: a short read, never served.
  const size_t cut = 7;  // 65536 bytes of data: the file ends in a full block's sum
  ASSERT_EQ(sizes[cut], 65536u);
  const std::string path = t->FileOf(keys[cut].Id());
  ASSERT_FALSE(path.empty());
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(fixed + 65536 + SumsBytes(65536) - 1)), 0);
  EXPECT_EQ(t->Read(keys[cut].Id(), keys[cut], V(keys[cut])), nullptr);
  EXPECT_EQ(t->stats().checksum_errors, 1u);
  EXPECT_EQ(t->state(), DiskTier::State::kOk);
}

TEST(DiskTierDirect, EverySizeReadsBackByteForByte) { EverySize(true); }
TEST(DiskTierDirect, EverySizeReadsBackByteForByteBuffered) { EverySize(false); }

TEST(DirectBuffers, AlignedKeptUpToTheirBounds) {
  DirectBuffers pool(2, 64 * 1024);
  std::vector<std::unique_ptr<DirectBuffers::Buffer>> taken;
  for (int i = 0; i < 3; ++i) taken.push_back(pool.Take(5000));
  for (const auto& b : taken) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data) % kDirectAlign, 0u);
    EXPECT_EQ(b->size, 64u * 1024);
  }
  const uint8_t* first = taken[0]->data;
  for (auto& b : taken) pool.Give(std::move(b));
  EXPECT_EQ(pool.kept(), 2u) << "at most `keep`";
  std::unique_ptr<DirectBuffers::Buffer> big = pool.Take(64 * 1024 + 1);
  EXPECT_EQ(big->size, 64u * 1024 + kDirectAlign) << "its own, rounded up";
  EXPECT_EQ(pool.kept(), 2u);
  pool.Give(std::move(big));
  EXPECT_EQ(pool.kept(), 2u) << "not kept: larger than the bound";
  std::unique_ptr<DirectBuffers::Buffer> a = pool.Take(1), b = pool.Take(64 * 1024);
  EXPECT_TRUE(a->data == first || b->data == first) << "reused";
  EXPECT_EQ(pool.kept(), 0u);
}

}  // namespace disk_tier_direct_test
}  // namespace epochfs::tier
