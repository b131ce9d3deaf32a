// Unit tests of the cache front with a second tier below RAM (a fake tier in
// memory): what a prefetch costs LOWER when the tier holds the file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>

#include "epochfs/cache/future_policy.h"
#include "epochfs/common/hash.h"
#include "epochfs/store/cache_front.h"
#include "epochfs/store/lower.h"
#include "epochfs/store/second_tier.h"

namespace epochfs::store {
namespace cache_front_tier_test {

namespace stdfs = std::filesystem;

// Holds copies by their whole key (the version included), as the disk tier.
class MemTier : public SecondTier {
 public:
  void Put(const LowerKey& key, std::string data) {
    std::lock_guard lock(mu_);
    held_[key.rel] = {key, std::move(data)};
  }
  int reads() const {
    std::lock_guard lock(mu_);
    return reads_;
  }
  ObjectRef Read(cache::ObjectId id, const LowerKey& key, const Version& v) override {
    std::lock_guard lock(mu_);
    auto it = held_.find(key.rel);
    if (it == held_.end() || !(it->second.first == key)) return nullptr;
    ++reads_;
    auto o = std::make_shared<Object>();
    o->id = id;
    o->version = v;
    o->data.assign(it->second.second.begin(), it->second.second.end());
    o->checksum = ObjectChecksum(o->data.data(), o->data.size());
    return o;
  }
  bool Write(cache::ObjectId, const LowerKey&, ObjectRef) override { return true; }
  void Erase(cache::ObjectId) override {}
  bool HasNews() const override { return false; }
  TierNews TakeNews() override { return {}; }
  TierStats stats() const override {
    TierStats s;
    s.budget = uint64_t{1} << 30;
    s.state = "ok";
    return s;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::pair<LowerKey, std::string>> held_;
  int reads_ = 0;
};

std::string WriteFile(const std::string& path, size_t size, unsigned seed) {
  std::string data(size, '\0');
  std::mt19937 rng(seed);
  for (char& c : data) c = static_cast<char>(rng());
  std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(size));
  return data;
}

// LOWER with a.bin and b.bin, the future policy with one job that reads both,
// and the tier holding a copy of a.bin.
struct TierFront {
  std::string root;
  std::unique_ptr<Lower> lower;
  std::unique_ptr<CacheFront> cache;
  MemTier tier;
  std::string a, b;
  TierFront() {
    char tmpl[] = "/tmp/epochfs-tierfront-XXXXXX";
    root = ::mkdtemp(tmpl);
    a = WriteFile(root + "/a.bin", 4096, 1);
    b = WriteFile(root + "/b.bin", 4096, 2);
    const uint64_t budget = 1 << 20;
    lower = std::move(Lower::Open(root)).value();
    cache = std::make_unique<CacheFront>(*lower, cache::MakeFuturePolicy({budget, 1'000'000}),
                                         budget);
    EXPECT_TRUE(cache->WithPolicy([&](cache::Policy& p) -> Result<cache::Decision> {
      cache::JobSpec spec;
      spec.id = 1;
      spec.name = "j";
      spec.batch_size = 1;
      spec.epochs = 1;
      if (Status s = p.AddJob(spec); !s.ok()) return s;
      if (Status s = p.SetSamples(1, {{ObjectIdOf("a.bin"), 4096}, {ObjectIdOf("b.bin"), 4096}});
          !s.ok()) {
        return s;
      }
      if (Status s = p.SetOrder(1, 0, {0, 1}); !s.ok()) return s;
      return cache::Decision{};
    }).ok());
    struct stat st;
    EXPECT_EQ(::stat((root + "/a.bin").c_str(), &st), 0);
    const Version v = VersionRule().Of(st);
    tier.Put(LowerKey{"a.bin", 0, 0, v}, a);
    cache->SetSecondTier(&tier);
  }
  ~TierFront() {
    cache.reset();
    stdfs::remove_all(root);
  }
  uint64_t LowerReads() const { return lower->health().counts().of(LowerCall::kRead); }
  std::string Ram(const std::string& rel) const {
    ObjectRef o = cache->ram().Find(ObjectIdOf(rel));
    return o ? std::string(o->data.begin(), o->data.end()) : std::string();
  }
};

// The tier holds a.bin: its prefetch stats LOWER for the version and reads
// not one byte of it; the bytes in RAM are the tier's.
TEST(CacheFrontTier, APrefetchTheTierServesReadsNothingFromLower) {
  TierFront f;
  Result<bool> r = f.cache->Prefetch({ObjectIdOf("a.bin"), "a.bin", {}, 1, 0});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(f.tier.reads(), 1);
  EXPECT_EQ(f.LowerReads(), 0u) << "a copy on the tier costs LOWER no read";
  EXPECT_EQ(f.cache->counters().bytes_read_lower, 0u);
  EXPECT_EQ(f.cache->counters().tier_hits, 1u);
  EXPECT_EQ(f.Ram("a.bin"), f.a);
}

// b.bin is not on the tier: its prefetch reads it from LOWER, bytes exact.
TEST(CacheFrontTier, APrefetchTheTierLacksReadsLower) {
  TierFront f;
  Result<bool> r = f.cache->Prefetch({ObjectIdOf("b.bin"), "b.bin", {}, 1, 1});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(f.tier.reads(), 0);
  EXPECT_GE(f.LowerReads(), 1u);
  EXPECT_EQ(f.cache->counters().bytes_read_lower, 4096u);
  EXPECT_EQ(f.Ram("b.bin"), f.b);
}

}  // namespace cache_front_tier_test
}  // namespace epochfs::store
