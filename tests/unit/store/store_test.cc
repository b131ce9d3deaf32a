// Unit tests of the RAM store, the lower reader and the cache front, on a real
// temporary directory. Also built under TSan (suite 'tsan').
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "epochfs/cache/epoch_policy.h"
#include "epochfs/cache/future_policy.h"
#include "epochfs/store/cache_front.h"
#include "epochfs/store/lower.h"
#include "epochfs/store/ram_store.h"

namespace epochfs::store {
namespace {

namespace stdfs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/epochfs-store-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { stdfs::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& rel, size_t size, unsigned seed) {
    stdfs::create_directories(stdfs::path(path_ + "/" + rel).parent_path());
    std::string data(size, '\0');
    std::mt19937 rng(seed);
    for (char& c : data) c = static_cast<char>(rng());
    std::ofstream(path_ + "/" + rel, std::ios::binary).write(data.data(), data.size());
    return data;
  }

 private:
  std::string path_;
};

ObjectRef MakeObject(cache::ObjectId id, size_t size) {
  auto o = std::make_shared<Object>();
  o->id = id;
  o->data.assign(size, 'x');
  o->version.size = size;
  return o;
}

TEST(RamStore, EnforcesBudgetAndCountsBytes) {
  RamStore s(100);
  EXPECT_TRUE(s.Insert(MakeObject(1, 60)));
  EXPECT_FALSE(s.Insert(MakeObject(2, 41)));  // would exceed
  EXPECT_TRUE(s.Insert(MakeObject(3, 40)));
  EXPECT_FALSE(s.Insert(MakeObject(1, 0)));   // already present
  EXPECT_EQ(s.used(), 100u);
  EXPECT_EQ(s.objects(), 2u);
  EXPECT_TRUE(s.Erase(1));
  EXPECT_FALSE(s.Erase(1));
  EXPECT_EQ(s.used(), 40u);
  EXPECT_EQ(s.Find(3)->data.size(), 40u);
  EXPECT_EQ(s.Find(1), nullptr);
}

TEST(RamStore, ConcurrentInsertsNeverExceedBudget) {
  RamStore s(10'000);
  std::vector<std::thread> ts;
  std::atomic<uint64_t> max_seen{0};
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        cache::ObjectId id = static_cast<cache::ObjectId>(t * 100000 + i);
        s.Insert(MakeObject(id, 97));
        uint64_t u = s.used();
        uint64_t m = max_seen.load();
        while (u > m && !max_seen.compare_exchange_weak(m, u)) {
        }
        if (i % 3 == 0) s.Erase(id);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_LE(max_seen.load(), 10'000u);
  EXPECT_EQ(s.used(), s.objects() * 97);
}

TEST(Lower, RefusesEscapesAndSymlinkTraversal) {
  TempDir d;
  d.Write("a/file", 10, 1);
  ASSERT_EQ(::symlink("/etc", (d.path() + "/a/etc").c_str()), 0);
  auto lower = Lower::Open(d.path());
  ASSERT_TRUE(lower.ok());
  const Lower& l = *lower.value();
  EXPECT_TRUE(l.Stat("a/file").ok());
  EXPECT_EQ(l.Stat("../etc").status().code(), Code::kNotFound);
  EXPECT_EQ(l.Stat("/etc/passwd").status().code(), Code::kNotFound);
  EXPECT_EQ(l.Stat("a/etc/passwd").status().code(), Code::kNotFound);  // through a symlink
  auto link = l.Stat("a/etc");  // the symlink itself is visible
  ASSERT_TRUE(link.ok());
  EXPECT_TRUE(S_ISLNK(link.value().st_mode));
  EXPECT_EQ(l.ReadLink("a/etc").value(), "/etc");
  EXPECT_FALSE(l.OpenFile("a/etc").ok());
  EXPECT_EQ(Lower::Open(d.path() + "/missing").status().code(), Code::kNotFound);
}

TEST(Lower, ListGivesNamesAndTypesThenStatEntriesTheirAttributes) {
  TempDir d;
  d.Write("x/one", 3, 1);
  d.Write("x/two", 5, 2);
  ASSERT_EQ(::mkdir((d.path() + "/x/sub").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("one", (d.path() + "/x/ln").c_str()), 0);
  auto lower = Lower::Open(d.path());
  auto list = lower.value()->List("x");
  ASSERT_TRUE(list.ok());
  std::map<std::string, mode_t> types;
  for (auto& e : list.value()) types[e.name] = e.type;
  // tmpfs and ext4 give d_type; 0 ("unknown") is allowed by the contract.
  EXPECT_EQ(types.size(), 4u);
  for (const auto& [name, want] : std::map<std::string, mode_t>{
           {"one", S_IFREG}, {"two", S_IFREG}, {"sub", S_IFDIR}, {"ln", S_IFLNK}}) {
    ASSERT_EQ(types.count(name), 1u) << name;
    EXPECT_TRUE(types[name] == want || types[name] == 0) << name;
  }
  auto st = lower.value()->StatEntries("x", {"two", "gone", "ln", "one"});
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st.value().size(), 4u);
  ASSERT_TRUE(st.value()[0]);
  EXPECT_EQ(st.value()[0]->st_size, 5);
  EXPECT_FALSE(st.value()[1]) << "a name that is not there";
  ASSERT_TRUE(st.value()[2]);
  EXPECT_TRUE(S_ISLNK(st.value()[2]->st_mode)) << "not followed";
  EXPECT_EQ(st.value()[3]->st_size, 3);
  EXPECT_EQ(lower.value()->StatEntries("nope", {"a"}).status().code(), Code::kNotFound);
}

struct Front {
  TempDir dir;
  std::unique_ptr<Lower> lower;
  std::unique_ptr<CacheFront> cache;
  // The one-copy gate's clock (CacheFront::SetGateClock): time passes only
  // when a test moves it, so no test depends on how fast it runs.
  std::shared_ptr<std::atomic<uint64_t>> gate_ns = std::make_shared<std::atomic<uint64_t>>(1);
  explicit Front(uint64_t budget, std::unique_ptr<cache::Policy> policy = nullptr) {
    lower = std::move(Lower::Open(dir.path())).value();
    if (!policy) policy = cache::MakeLruPolicy(budget);
    cache = std::make_unique<CacheFront>(*lower, std::move(policy), budget);
    cache->SetGateClock([clock = gate_ns] { return clock->load(); });
  }
  GetRequest Req(const std::string& rel, cache::ObjectId id) {
    struct stat st;
    EXPECT_EQ(::stat((dir.path() + "/" + rel).c_str(), &st), 0);
    return {id, rel, lower->versions().Of(st)};
  }
};

TEST(CacheFront, MissThenHitServesExactBytes) {
  Front f(1 << 20);
  std::string want = f.dir.Write("s/0.bin", 12345, 7);
  auto r1 = f.cache->Get(f.Req("s/0.bin", 1));
  ASSERT_TRUE(r1.ok());
  auto r2 = f.cache->Get(f.Req("s/0.bin", 1));
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(std::string(r2.value()->data.begin(), r2.value()->data.end()), want);
  EXPECT_EQ(r1.value().get(), r2.value().get());
  CacheCounters c = f.cache->counters();
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.hits, 1u);
  EXPECT_EQ(c.bytes_read_lower, 12345u);
  EXPECT_EQ(f.cache->ram().used(), 12345u);
  // One load from LOWER; two reads waited (the miss for it, the hit not).
  EXPECT_EQ(f.cache->load_time().count, 1u);
  EXPECT_EQ(f.cache->read_wait().count, 2u);
  EXPECT_GE(f.cache->read_wait().sum_ns, f.cache->load_time().sum_ns);
}

TEST(CacheFront, ConcurrentReadersOfOneMissingFileCauseOneLowerRead) {
  Front f(64 << 20);
  std::string want = f.dir.Write("big.bin", 8 << 20, 3);
  GetRequest req = f.Req("big.bin", 42);
  constexpr int kThreads = 8;
  std::barrier start(kThreads);
  std::vector<std::thread> ts;
  std::atomic<int> exact{0};
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([&] {
      start.arrive_and_wait();
      auto r = f.cache->Get(req);
      if (r.ok() && std::equal(want.begin(), want.end(), r.value()->data.begin())) ++exact;
    });
  }
  for (auto& t : ts) t.join();
  CacheCounters c = f.cache->counters();
  EXPECT_EQ(exact.load(), kThreads);
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.hits + c.coalesced, static_cast<uint64_t>(kThreads - 1));
  EXPECT_EQ(c.bytes_read_lower, uint64_t{8} << 20);
}

// Prefetch through the cache front, with the "future" policy and one job
// whose order reads b.bin then a.bin (object ids a_id and b_id, from their
// paths as the daemon's).
struct PrefetchFront : Front {
  std::string a, b;
  cache::ObjectId a_id = 0, b_id = 0;
  cache::ObjectId IdOf(const std::string& rel) { return ObjectIdOf(rel); }
  explicit PrefetchFront(uint64_t budget, size_t size = 4096)
      : Front(budget, cache::MakeFuturePolicy({budget, 1'000'000})) {
    a = dir.Write("a.bin", size, 1);
    b = dir.Write("b.bin", size, 2);
    a_id = IdOf("a.bin");
    b_id = IdOf("b.bin");
    EXPECT_TRUE(cache->WithPolicy([&](cache::Policy& p) -> Result<cache::Decision> {
      cache::JobSpec spec;
      spec.id = 1;
      spec.name = "j";
      spec.batch_size = 1;
      spec.epochs = 1;
      if (Status s = p.AddJob(spec); !s.ok()) return s;
      if (Status s = p.SetSamples(1, {{a_id, size}, {b_id, size}}); !s.ok()) return s;
      if (Status s = p.SetOrder(1, 0, {1, 0}); !s.ok()) return s;
      return cache::Decision{};
    }).ok());
  }
  GetRequest ReqOf(cache::ObjectId id) {
    GetRequest r = Req(id == a_id ? "a.bin" : "b.bin", id);
    r.job = 1;
    r.sample = id == a_id ? 0 : 1;
    return r;
  }
  GetRequest PrefetchOfB() { return {b_id, "b.bin", {}, 1, 1}; }
};

TEST(CacheFrontPrefetch, PrefetchThenReadIsOneLowerReadAndAPrefetchHit) {
  PrefetchFront f(1 << 20);
  std::vector<cache::PrefetchHint> hints = f.cache->PrefetchHints(4, nullptr, {});
  ASSERT_EQ(hints.size(), 2u);
  EXPECT_EQ(hints[0].object, f.b_id);  // b.bin is read first
  GetRequest pre{hints[0].object, "b.bin", {}, hints[0].job, static_cast<int64_t>(hints[0].sample)};
  Result<bool> r = f.cache->Prefetch(pre);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value());
  EXPECT_FALSE(f.cache->Prefetch(pre).value()) << "resident: not read again";
  EXPECT_EQ(f.cache->PrefetchHints(4, nullptr, {}).size(), 1u);
  EXPECT_TRUE(f.cache->PrefetchHints(4, [&](cache::ObjectId o) { return o == f.a_id; }, {}).empty());
  auto got = f.cache->Get(f.ReqOf(f.b_id));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::string(got.value()->data.begin(), got.value()->data.end()), f.b);
  CacheCounters c = f.cache->counters();
  EXPECT_EQ(c.prefetched, 1u);
  EXPECT_EQ(c.prefetch_hits, 1u);
  EXPECT_EQ(c.prefetch_wasted, 0u);
  EXPECT_EQ(c.hits, 1u);
  EXPECT_EQ(c.misses, 0u);
  EXPECT_EQ(c.bytes_read_lower, 4096u);
  EXPECT_EQ(c.prefetch_bytes, 4096u);
  // The job's read counted once, as a hit.
  f.cache->ReadPolicy([](const cache::Policy& p) {
    EXPECT_EQ(p.Jobs().at(0).current.hits, 1u);
    EXPECT_EQ(p.Jobs().at(0).current.misses, 0u);
  });
}

// The file at a sample's path is replaced after its prefetch by another of
// the same size and mtime (another inode): a reader who stats the new file
// gets the new bytes, never the prefetched ones.
TEST(CacheFrontPrefetch, AFileReplacedAfterItsPrefetchIsNotServedStale) {
  PrefetchFront f(1 << 20);
  ASSERT_TRUE(f.cache->Prefetch(f.PrefetchOfB()).value());
  const std::string path = f.dir.path() + "/b.bin";
  struct stat old_st;
  ASSERT_EQ(::stat(path.c_str(), &old_st), 0);
  const std::string keep = f.dir.path() + "/old-b.bin";
  ASSERT_EQ(::rename(path.c_str(), keep.c_str()), 0);  // the old inode stays alive
  const std::string fresh = f.dir.Write("b.bin", 4096, 9);
  const struct timespec times[2] = {old_st.st_atim, old_st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);  // same size, same mtime
  GetRequest req = f.ReqOf(f.b_id);
  ASSERT_NE(req.version, f.lower->versions().Of(old_st)) << "the inode number and ctime tell them apart";
  auto got = f.cache->Get(req);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::string(got.value()->data.begin(), got.value()->data.end()), fresh);
  EXPECT_NE(fresh, f.b);
  EXPECT_EQ(f.cache->counters().bytes_read_lower, 2u * 4096u) << "loaded again";
}

// A samples list names files unchecked: a prefetch of a missing one, of a
// directory, or of one too large to cache, fails with the error the
// prefetcher reads as "never again", and caches nothing.
TEST(CacheFrontPrefetch, UnreadableSamplesFailClearly) {
  PrefetchFront f(1 << 20);
  ASSERT_EQ(::mkdir((f.dir.path() + "/d").c_str(), 0755), 0);
  f.dir.Write("big.bin", (1 << 20) / 4 + 1, 3);
  struct Case {
    const char* rel;
    Code code;
  };
  for (const Case& c : {Case{"nope.bin", Code::kNotFound}, Case{"d", Code::kNotFound},
                        Case{"big.bin", Code::kInvalidArgument}}) {
    Result<bool> r = f.cache->Prefetch({ObjectIdOf(c.rel), c.rel, {}, 1, 0});
    ASSERT_FALSE(r.ok()) << c.rel;
    EXPECT_EQ(r.status().code(), c.code) << c.rel << ": " << r.status().message();
    EXPECT_NE(r.status().message().find(c.rel), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(f.cache->ram().used(), 0u);
  EXPECT_EQ(f.cache->counters().prefetched, 0u);
  EXPECT_EQ(f.cache->counters().bytes_read_lower, 0u);
}

TEST(CacheFrontPrefetch, OnAUsersBehalfOnlyWhatTheyMayReadIsLoaded) {
  PrefetchFront f(1 << 20);
  ASSERT_EQ(::chmod((f.dir.path() + "/b.bin").c_str(), 0640), 0);
  // Neither b.bin's owner nor in its group: the file fails as a missing one,
  // in the same words, with nothing read (not even a too-large file's size
  // would show).
  auto stranger = std::make_shared<const Credentials>(Credentials{::geteuid() + 4242, 4242, {}});
  GetRequest pre = f.PrefetchOfB();
  pre.as = stranger;
  Result<bool> r = f.cache->Prefetch(pre);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_EQ(r.status().message(), "b.bin: No such file or directory");
  Result<bool> missing = f.cache->Prefetch({ObjectIdOf("nope.bin"), "nope.bin", {}, 1, 0});
  EXPECT_EQ(missing.status().message(), "nope.bin: No such file or directory");
  EXPECT_EQ(f.cache->ram().used(), 0u);
  EXPECT_EQ(f.cache->counters().prefetched, 0u);
  EXPECT_EQ(f.cache->counters().bytes_read_lower, 0u);
  // In its group, the user reads it: loaded.
  pre.as = std::make_shared<const Credentials>(Credentials{::geteuid() + 4242, 4242, {::getegid()}});
  r = f.cache->Prefetch(pre);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r.value());
  EXPECT_EQ(f.cache->counters().bytes_read_lower, 4096u);
}

TEST(CacheFrontPrefetch, EvictedUnreadIsWasted) {
  PrefetchFront f(1 << 20);
  GetRequest pre = f.PrefetchOfB();
  ASSERT_TRUE(f.cache->Prefetch(pre).value());
  ASSERT_TRUE(f.cache->SetBudget(1000).ok());  // nothing fits
  CacheCounters c = f.cache->counters();
  EXPECT_EQ(c.prefetch_wasted, 1u);
  EXPECT_EQ(c.prefetch_hits, 0u);
  EXPECT_EQ(f.cache->ram().used(), 0u);
}

// A prefetch and readers of one file at once, in any interleaving: the file
// is read from LOWER once, and every reader gets its exact bytes.
TEST(CacheFrontPrefetch, ConcurrentPrefetchAndReadsReadTheFileOnce) {
  for (int round = 0; round < 20; ++round) {
    PrefetchFront f(64 << 20, 4 << 20);
    constexpr int kReaders = 4;
    std::barrier start(kReaders + 1);
    std::atomic<int> exact{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < kReaders; ++i) {
      ts.emplace_back([&] {
        start.arrive_and_wait();
        auto r = f.cache->Get(f.ReqOf(f.b_id));
        if (r.ok() && std::equal(f.b.begin(), f.b.end(), r.value()->data.begin())) ++exact;
      });
    }
    ts.emplace_back([&] {
      start.arrive_and_wait();
      EXPECT_TRUE(f.cache->Prefetch(f.PrefetchOfB()).ok());
    });
    for (auto& t : ts) t.join();
    CacheCounters c = f.cache->counters();
    EXPECT_EQ(exact.load(), kReaders);
    EXPECT_EQ(c.bytes_read_lower, uint64_t{4} << 20);
    EXPECT_EQ(c.misses + c.prefetched, 1u);
    EXPECT_LE(c.prefetch_hits, 1u);
    if (HasFailure()) break;
  }
}

// Concurrent readers under a budget that keeps evicting: whatever the
// interleaving of lookups, loads and evictions, the RAM store holds exactly
// what the policy counts as resident (no object the policy forgot stays in
// RAM, no object the policy counts is missing), and every read is exact.
// Both policies: LRU, and the epoch policy's shared region (no job).
class StoreAndPolicy : public ::testing::TestWithParam<const char*> {};

TEST_P(StoreAndPolicy, AgreeUnderConcurrentReadsAndEvictions) {
  constexpr int kFiles = 12, kThreads = 8, kReads = 20000;
  cache::EpochPolicyParams params;
  params.budget_bytes = 6'000;
  Front f(6'000, std::string(GetParam()) == "lru" ? cache::MakeLruPolicy(6'000)
                                                  : cache::MakeEpochPolicy(params));
  std::vector<std::string> want;
  std::vector<GetRequest> reqs;
  for (int i = 0; i < kFiles; ++i) {
    want.push_back(f.dir.Write("f" + std::to_string(i), 1000 + i, i));
    reqs.push_back(f.Req("f" + std::to_string(i), static_cast<cache::ObjectId>(i + 1)));
  }
  std::barrier start(kThreads);
  std::atomic<int> wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937 rng(t);
      start.arrive_and_wait();
      for (int n = 0; n < kReads; ++n) {
        // Mostly a few hot files (hits racing with evictions), some cold.
        const int i = rng() % 4 == 0 ? static_cast<int>(rng() % kFiles) : static_cast<int>(rng() % 3);
        auto r = f.cache->Get(reqs[i]);
        if (!r.ok() || !std::equal(want[i].begin(), want[i].end(), r.value()->data.begin(),
                                   r.value()->data.end())) {
          ++wrong;
        }
        // Some reads hand the object over (fuse.no_open's one copy): the
        // next Get of it refills it, racing with the others.
        if (r.ok() && rng() % 8 == 0) f.cache->HandOver(r.value());
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(wrong.load(), 0);
  uint64_t resident = 0;
  f.cache->ReadPolicy([&](const cache::Policy& p) { resident = p.resident_bytes(); });
  EXPECT_EQ(f.cache->ram().used(), resident);
  EXPECT_LE(f.cache->ram().used(), 6'000u);
  EXPECT_GT(f.cache->counters().refills, 0u);
  // Every file once more, alone: the store and the policy still agree.
  for (int i = 0; i < kFiles; ++i) ASSERT_TRUE(f.cache->Get(reqs[i]).ok());
  f.cache->ReadPolicy([&](const cache::Policy& p) { resident = p.resident_bytes(); });
  EXPECT_EQ(f.cache->ram().used(), resident);
}

INSTANTIATE_TEST_SUITE_P(CacheFront, StoreAndPolicy, ::testing::Values("lru", "epoch"));

TEST(CacheFront, SmallBudgetEvictsAndStaysWithinBudget) {
  Front f(10'000);
  for (int i = 0; i < 20; ++i) f.dir.Write("f" + std::to_string(i), 1500 + i, i);
  for (int pass = 0; pass < 3; ++pass) {
    for (int i = 0; i < 20; ++i) {
      auto r = f.cache->Get(f.Req("f" + std::to_string(i), static_cast<cache::ObjectId>(i + 1)));
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r.value()->data.size(), static_cast<size_t>(1500 + i));
      EXPECT_LE(f.cache->ram().used(), 10'000u);
    }
  }
  EXPECT_GT(f.cache->counters().evictions, 0u);
}

TEST(CacheFront, SetBudgetShrinksTheStoreAndTellsTheDropListener) {
  Front f(100'000);
  std::vector<cache::ObjectId> dropped;
  f.cache->SetDropListener([&dropped](cache::ObjectId id) { dropped.push_back(id); });
  std::vector<std::string> want;
  for (int i = 0; i < 10; ++i) want.push_back(f.dir.Write("f" + std::to_string(i), 5000, i));
  for (int i = 0; i < 10; ++i) {
    const auto id = static_cast<cache::ObjectId>(i + 1);
    ASSERT_TRUE(f.cache->Get(f.Req("f" + std::to_string(i), id)).ok());
  }
  EXPECT_EQ(f.cache->ram().used(), 50'000u);
  Result<uint64_t> n = f.cache->SetBudget(20'000);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 6u);
  EXPECT_EQ(dropped.size(), 6u);
  EXPECT_EQ(f.cache->ram().budget(), 20'000u);
  EXPECT_EQ(f.cache->ram().used(), 20'000u);
  EXPECT_EQ(f.cache->max_object_bytes(), 5'000u);
  // The least recently used went (LRU policy): 1..6; the rest are hits.
  for (cache::ObjectId id = 1; id <= 6; ++id) EXPECT_EQ(f.cache->ram().Find(id), nullptr);
  const uint64_t hits = f.cache->counters().hits;
  for (int i = 9; i >= 0; --i) {
    auto r = f.cache->Get(f.Req("f" + std::to_string(i), static_cast<cache::ObjectId>(i + 1)));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(std::string(r.value()->data.begin(), r.value()->data.end()), want[i]);
    EXPECT_LE(f.cache->ram().used(), 20'000u);
  }
  EXPECT_EQ(f.cache->counters().hits, hits + 4);
  // Growing evicts nothing and lets more in.
  n = f.cache->SetBudget(200'000);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 0u);
  for (int i = 0; i < 10; ++i) {
    const auto id = static_cast<cache::ObjectId>(i + 1);
    ASSERT_TRUE(f.cache->Get(f.Req("f" + std::to_string(i), id)).ok());
  }
  EXPECT_EQ(f.cache->ram().used(), 50'000u);
}

TEST(RamStore, SetBudgetRefusesInsertsUntilBackUnder) {
  RamStore s(300);
  auto obj = [](cache::ObjectId id, size_t n) {
    auto o = std::make_shared<Object>();
    o->id = id;
    o->data.assign(n, 'x');
    return ObjectRef(o);
  };
  EXPECT_TRUE(s.Insert(obj(1, 200)));
  s.SetBudget(100);
  EXPECT_FALSE(s.Insert(obj(2, 10)));
  EXPECT_TRUE(s.Erase(1));
  EXPECT_TRUE(s.Insert(obj(2, 100)));
  EXPECT_EQ(s.budget(), 100u);
}

TEST(CacheFront, ChangedVersionReloads) {
  Front f(1 << 20);
  f.dir.Write("v", 100, 1);
  GetRequest old_req = f.Req("v", 5);
  ASSERT_TRUE(f.cache->Get(old_req).ok());
  std::string fresh = f.dir.Write("v", 200, 2);
  GetRequest new_req = f.Req("v", 5);
  auto r = f.cache->Get(new_req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::string(r.value()->data.begin(), r.value()->data.end()), fresh);
  EXPECT_EQ(f.cache->counters().invalidations, 1u);
  EXPECT_EQ(f.cache->counters().misses, 2u);
}

// A file changed on LOWER since the reader's stat: Get returns the bytes there
// now, uncached, and counts nothing; the reader refuses them (an open answers
// ESTALE), looks again and reads the new version, and that read is the one
// counted: once, as the policy hears it (the policy was told of a miss once).
TEST(CacheFront, ALoadOfAnotherVersionThanTheReadersIsNotCounted) {
  Front f(1 << 20);
  f.dir.Write("v", 100, 1);
  GetRequest stale = f.Req("v", 5);
  ::usleep(10'000);  // another mtime
  const std::string fresh = f.dir.Write("v", 200, 2);
  auto r = f.cache->Get(stale);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::string(r.value()->data.begin(), r.value()->data.end()), fresh);
  EXPECT_NE(r.value()->version, stale.version);
  EXPECT_EQ(f.cache->ram().Find(5), nullptr) << "another version is not cached";
  CacheCounters c = f.cache->counters();
  EXPECT_EQ(c.hits + c.misses + c.coalesced + c.refills, 0u);
  EXPECT_EQ(c.admissions, 0u);
  EXPECT_EQ(c.bytes_read_lower, 200u);  // read from LOWER all the same
  // The read again, at the version the reader now knows: one miss, admitted.
  auto again = f.cache->Get(f.Req("v", 5));
  ASSERT_TRUE(again.ok());
  c = f.cache->counters();
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.hits + c.coalesced + c.refills, 0u);
  EXPECT_EQ(c.admissions, 1u);
  EXPECT_EQ(f.cache->ram().Find(5), again.value());
}

// fuse.no_open's one copy: a handed-over object keeps its charge and its
// place with the policy, without its bytes; a Get reads it again from lower
// (a refill, a hit for the policy) and puts the bytes back.
TEST(CacheFront, HandedOverObjectsAreRefilledFromLower) {
  Front f(1 << 20);
  std::string want = f.dir.Write("h", 5000, 3);
  auto r1 = f.cache->Get(f.Req("h", 9));
  ASSERT_TRUE(r1.ok());
  EXPECT_FALSE(f.cache->HandOver(MakeObject(9, 5000))) << "not the resident object";
  ASSERT_TRUE(f.cache->HandOver(r1.value()));
  EXPECT_FALSE(f.cache->HandOver(r1.value())) << "once";
  ObjectRef stub = f.cache->ram().Find(9);
  ASSERT_TRUE(stub && stub->handed_over);
  EXPECT_TRUE(stub->data.empty());
  EXPECT_EQ(f.cache->ram().used(), 5000u);  // still charged
  EXPECT_EQ(f.cache->ram().handed_bytes(), 5000u);
  EXPECT_EQ(f.cache->ram().handed_objects(), 1u);
  EXPECT_FALSE(f.cache->Prefetch(f.Req("h", 9)).value()) << "resident: nothing to prefetch";
  auto r2 = f.cache->Get(f.Req("h", 9));
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(std::string(r2.value()->data.begin(), r2.value()->data.end()), want);
  CacheCounters c = f.cache->counters();
  EXPECT_EQ(c.misses, 1u);
  // The policy hears a hit (it is cached); the counters a refill: it was
  // read from LOWER again, and a read that waited for LOWER is no hit.
  EXPECT_EQ(c.hits, 0u);
  EXPECT_EQ(c.refills, 1u);
  EXPECT_EQ(c.handovers, 1u);
  EXPECT_EQ(c.bytes_read_lower, 10000u);
  EXPECT_EQ(f.cache->ram().Find(9), r2.value());
  EXPECT_EQ(f.cache->ram().handed_bytes(), 0u);
  EXPECT_EQ(f.cache->ram().used(), 5000u);
  // Handed over again, then evicted: the charge leaves with the stub.
  ASSERT_TRUE(f.cache->HandOver(r2.value()));
  f.cache->Invalidate(9);
  EXPECT_EQ(f.cache->ram().used(), 0u);
  EXPECT_EQ(f.cache->ram().handed_bytes(), 0u);
  EXPECT_EQ(f.cache->ram().objects(), 0u);
}

// One copy while the kernel keeps losing what it is handed: once the bytes
// refilled from LOWER reach an eighth of the budget (HandoverGate), nothing
// is handed over, so that the daemon's copy answers the next loss from RAM
// (no read of LOWER); a refill under that is handed back.
TEST(CacheFront, AKernelThatKeepsLosingPagesGetsNoMoreHandovers) {
  constexpr uint64_t kSize = 40 << 10;  // 8 of them: 320 KiB, the shut point 128 KiB
  Front f(1 << 20);
  std::vector<std::string> want;
  for (int i = 0; i < 9; ++i) {
    want.push_back(f.dir.Write("k" + std::to_string(i), kSize, 20 + i));
    auto r = f.cache->Get(f.Req("k" + std::to_string(i), 100 + i));
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(f.cache->HandOver(r.value())) << i;
  }
  // The kernel loses the first one: refilled, and handed back (one loss is
  // the price of one copy).
  auto r0 = f.cache->Get(f.Req("k0", 100));
  ASSERT_TRUE(r0.ok());
  EXPECT_TRUE(f.cache->HandOver(r0.value())) << "40 KiB lost: under an eighth of 1 MiB";
  // It loses all of them (a drop_caches): each is read again from LOWER.
  for (int i = 0; i < 8; ++i) {
    auto r = f.cache->Get(f.Req("k" + std::to_string(i), 100 + i));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(std::string(r.value()->data.begin(), r.value()->data.end()), want[i]);
    const bool handed = f.cache->HandOver(r.value());
    // 40 KiB lost before these; shut from the third (128 KiB) on.
    EXPECT_EQ(handed, i < 2) << i;
    ObjectRef now = f.cache->ram().Find(100 + i);
    ASSERT_TRUE(now);
    EXPECT_EQ(now->handed_over, handed) << i;
  }
  CacheCounters c = f.cache->counters();
  EXPECT_EQ(c.refills, 9u);
  EXPECT_EQ(c.refill_bytes, 9 * kSize);
  EXPECT_EQ(c.handovers, 9u + 1 + 2);
  EXPECT_EQ(f.cache->ram().handed_objects(), 3u) << "k2..k7 kept, k8 never lost";
  EXPECT_EQ(f.cache->ram().used(), 9 * kSize) << "the charge does not move";
  // Kept: their next reads are hits from RAM, LOWER is not read again.
  const uint64_t lower = c.bytes_read_lower;
  for (int i = 2; i < 8; ++i) {
    auto r = f.cache->Get(f.Req("k" + std::to_string(i), 100 + i));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(std::string(r.value()->data.begin(), r.value()->data.end()), want[i]);
  }
  c = f.cache->counters();
  EXPECT_EQ(c.bytes_read_lower, lower);
  EXPECT_EQ(c.hits, 6u);
  // An object never lost is not handed over either while the gate is shut.
  f.dir.Write("k9", kSize, 40);
  auto r9 = f.cache->Get(f.Req("k9", 109));
  ASSERT_TRUE(r9.ok());
  EXPECT_FALSE(f.cache->HandOver(r9.value()));
  EXPECT_FALSE(f.cache->ram().Find(109)->handed_over);
  EXPECT_FALSE(f.cache->HandsOver());
  // The losses (360 KiB) halve every minute: still shut after one (180 KiB),
  // open again after two (90 KiB, under the 128 KiB shut point).
  *f.gate_ns += HandoverGate::kHalfLifeNs;
  EXPECT_FALSE(f.cache->HandsOver());
  EXPECT_FALSE(f.cache->HandOver(r9.value()));
  *f.gate_ns += HandoverGate::kHalfLifeNs;
  EXPECT_TRUE(f.cache->HandsOver());
  EXPECT_TRUE(f.cache->HandOver(r9.value()));
  EXPECT_TRUE(f.cache->ram().Find(109)->handed_over);
}

// A file handed over with a checksum per block: the pieces refilled of it
// are its own losses too (HandoverGate::RefillsWhole). While the gate is
// open it is never refilled whole; while shut, a loss from its start is,
// and so is a new loss once its pieces have cost half of it; the whole
// refill (Get) makes it the daemon's again, its losses forgotten.
TEST(CacheFront, WhileTheGateIsShutAFileThatKeepsLosingPiecesIsRefilledWhole) {
  constexpr uint64_t kBlock = 4096;
  Front f(1 << 20);  // the gate shuts at 128 KiB lost
  std::string want = f.dir.Write("big", 16 * kBlock, 5);
  auto r = f.cache->Get(f.Req("big", 1));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(f.cache->HandOver(r.value(), kBlock));
  ObjectRef stub = f.cache->ram().Find(1);
  ASSERT_TRUE(stub && stub->handed_over);
  ASSERT_EQ(stub->block_sums.size(), 16u);
  EXPECT_FALSE(f.cache->RefillsWhole(stub, true, true)) << "the gate open";
  GetRequest g = f.Req("big", 1);
  g.heard = true;
  for (uint64_t i = 3; i < 11; ++i) {  // 8 of its 16 blocks lost
    auto piece = f.cache->RefillBlock(g, stub, i, i == 3);
    ASSERT_TRUE(piece.ok());
    EXPECT_EQ(std::string(piece.value()->data.begin(), piece.value()->data.end()),
              want.substr(i * kBlock, kBlock));
  }
  EXPECT_FALSE(f.cache->RefillsWhole(stub, true, false)) << "lost half, the gate open";
  // Three other files lost whole (120 KiB, 152 KiB in all) shut it.
  for (int i = 0; i < 3; ++i) {
    const std::string name = "s" + std::to_string(i);
    f.dir.Write(name, 40 << 10, 30 + i);
    auto s = f.cache->Get(f.Req(name, 10 + i));
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(f.cache->HandOver(s.value()));
    ASSERT_TRUE(f.cache->Get(f.Req(name, 10 + i)).ok());  // lost: refilled whole
  }
  ASSERT_FALSE(f.cache->HandsOver());
  EXPECT_FALSE(f.cache->RefillsWhole(stub, false, false)) << "the loss read in pieces goes on";
  EXPECT_TRUE(f.cache->RefillsWhole(stub, true, false)) << "its pieces cost half of it";
  // Refilled whole: kept by the daemon (the gate is shut), its losses over.
  auto back = f.cache->Get(f.Req("big", 1));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::string(back.value()->data.begin(), back.value()->data.end()), want);
  EXPECT_FALSE(f.cache->HandOver(back.value(), kBlock));
  EXPECT_FALSE(f.cache->ram().Find(1)->handed_over);
  EXPECT_FALSE(f.cache->RefillsWhole(stub, true, false)) << "forgotten: the daemon's again";
  EXPECT_TRUE(f.cache->RefillsWhole(stub, true, true)) << "a loss from its start: whole";
  EXPECT_FALSE(f.cache->RefillsWhole(f.cache->ram().Find(1), true, true)) << "not handed over";
  CacheCounters c = f.cache->counters();
  EXPECT_EQ(c.refill_bytes, 8 * kBlock + 3 * (40 << 10) + 16 * kBlock);
}

// One copy on a mount that answers OPEN: the open of a handed-over object is
// the policy's access (HitHandedOver), and the refill its READ may need
// later (GetRequest::heard) admits nothing: the open's hit becomes a refill
// (first_refill, once), and nothing else is counted.
TEST(CacheFront, AnOpenOfAHandedOverObjectIsOneAccess) {
  Front f(1 << 20);
  std::string want = f.dir.Write("h", 5000, 6);
  const GetRequest req = f.Req("h", 9);
  EXPECT_EQ(f.cache->HitHandedOver(req), nullptr) << "nothing resident";
  auto r1 = f.cache->Get(req);
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(f.cache->HitHandedOver(req), nullptr) << "resident, not handed over";
  ASSERT_TRUE(f.cache->HandOver(r1.value()));
  GetRequest other = req;
  other.version.size += 1;
  EXPECT_EQ(f.cache->HitHandedOver(other), nullptr) << "another version";
  EXPECT_EQ(f.cache->counters().hits, 0u);
  ObjectRef stub = f.cache->HitHandedOver(req);
  ASSERT_TRUE(stub && stub->handed_over);
  EXPECT_EQ(f.cache->counters().hits, 1u);
  GetRequest heard = req;
  heard.heard = true;
  GetRequest first = heard;
  first.first_refill = true;
  auto r2 = f.cache->Get(first);  // the kernel lost pages: refilled in place
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(std::string(r2.value()->data.begin(), r2.value()->data.end()), want);
  EXPECT_EQ(f.cache->ram().Find(9), r2.value());
  ASSERT_TRUE(f.cache->Get(heard).ok());  // resident now: served, not counted
  CacheCounters c = f.cache->counters();
  EXPECT_EQ(c.hits, 0u) << "the open's hit was a refill";
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.refills, 1u);
  EXPECT_EQ(c.hits + c.misses + c.coalesced + c.refills, 2u) << "two opens";
  EXPECT_EQ(c.refill_bytes, 5000u);
  EXPECT_EQ(c.bytes_read_lower, 10000u);
  // A second open served from RAM, whose READ finds the bytes resident:
  // its hit stays one.
  ASSERT_TRUE(f.cache->HandOver(r2.value()));
  ASSERT_TRUE(f.cache->HitHandedOver(req));
  auto again = f.cache->Get(first);  // the stub: refilled, the hit moved
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(f.cache->Get(first).ok());  // resident: nothing moves
  c = f.cache->counters();
  EXPECT_EQ(c.hits, 0u);
  EXPECT_EQ(c.refills, 2u);
  ASSERT_TRUE(f.cache->HandOver(again.value()));
  ASSERT_TRUE(f.cache->HitHandedOver(req));
  auto third = f.cache->Get(heard);  // not the open's first refill: not moved
  ASSERT_TRUE(third.ok());
  c = f.cache->counters();
  EXPECT_EQ(c.hits, 1u);
  EXPECT_EQ(c.refills, 2u);
  EXPECT_EQ(c.hits + c.misses + c.coalesced + c.refills, 4u) << "four opens";
  r2 = third;
  EXPECT_EQ(f.cache->HitHandedOver(req), nullptr) << "refilled: a Get serves it";
  // Evicted between the open and its READ: the bytes are read and served,
  // neither counted nor admitted (the policy decided at the open).
  ASSERT_TRUE(f.cache->HandOver(r2.value()));
  f.cache->Invalidate(9);
  auto r3 = f.cache->Get(heard);
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(std::string(r3.value()->data.begin(), r3.value()->data.end()), want);
  c = f.cache->counters();
  EXPECT_EQ(c.hits + c.misses + c.refills, 4u);
  EXPECT_EQ(c.admissions, 1u);
  EXPECT_EQ(f.cache->ram().objects(), 0u);
  // The file changed on LOWER since: the new bytes are served for the
  // caller to refuse (their bytes differ), nothing counted; and once
  // another open has cached the new version, that is served for the caller
  // to compare, and stays cached.
  f.dir.Write("h", 6000, 7);
  auto r4 = f.cache->Get(heard);
  ASSERT_TRUE(r4.ok());
  EXPECT_NE(r4.value()->version, heard.version);
  EXPECT_EQ(f.cache->counters().hits + f.cache->counters().misses, 2u);
  ASSERT_TRUE(f.cache->Get(f.Req("h", 9)).ok());  // a new open: a miss, admitted
  ObjectRef now = f.cache->ram().Find(9);
  ASSERT_TRUE(now);
  auto r5 = f.cache->Get(heard);
  ASSERT_TRUE(r5.ok());
  EXPECT_EQ(r5.value(), now);
  EXPECT_NE(r5.value()->checksum, stub->checksum);
  EXPECT_EQ(f.cache->ram().Find(9), now) << "the new version stays cached";
  EXPECT_EQ(f.cache->counters().invalidations, c.invalidations);
}

// An open whose inode the kernel was sent this version whole asks Get with
// kernel_holds: whatever the RAM tier holds of the version at that moment is
// its hit, in one look, and LOWER is never read under the kernel's pages.
// The interleaving it closes (four readers of a file the kernel had lost):
// reader A's READ refilled the stub (its bytes back in RAM, not yet handed
// back); reader B's open looked for a stub, found those bytes and took
// nothing; A's READ handed them back; B's Get then found the stub and read
// the file again from LOWER. B kept that copy (its inode's pages, A's, were
// kept: keep_cache), the kernel asked B for nothing, and the copy was never
// handed over: the file was in memory twice for good.
TEST(CacheFront, AnOpenTheKernelMayServeIsOneLookAndNeverALoad) {
  Front f(1 << 20);
  const std::string want = f.dir.Write("h", 64 << 10, 8);
  const GetRequest req = f.Req("h", 9);
  auto loaded = f.cache->Get(req);
  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE(f.cache->HandOver(loaded.value()));
  GetRequest open = req;
  open.kernel_holds = true;
  GetRequest refill = req;
  refill.heard = true;
  refill.first_refill = true;
  auto bytes = [](const ObjectRef& o) { return std::string(o->data.begin(), o->data.end()); };

  // A's open: the stub, a hit.
  auto a = f.cache->Get(open);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a.value()->handed_over);
  EXPECT_EQ(a.value(), f.cache->ram().Find(9));
  // A's READ: the kernel lost the pages, refilled in place.
  auto a_read = f.cache->Get(refill);
  ASSERT_TRUE(a_read.ok());
  ASSERT_FALSE(a_read.value()->handed_over);
  EXPECT_EQ(bytes(a_read.value()), want);
  // B's open while the refill is resident: a hit on those bytes, and the
  // stub's hit counter is not taken from them (HitHandedOver sees no stub).
  EXPECT_EQ(f.cache->HitHandedOver(req), nullptr);
  auto b = f.cache->Get(open);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.value(), a_read.value());
  // A's READ hands them back (KernelHandover::SentToKernel); C's open
  // (and B's, had it looked only now) takes the stub, reading nothing.
  ASSERT_TRUE(f.cache->HandOver(a_read.value()));
  auto c = f.cache->Get(open);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c.value()->handed_over);
  EXPECT_EQ(c.value(), f.cache->ram().Find(9));

  CacheCounters n = f.cache->counters();
  EXPECT_EQ(n.bytes_read_lower, 2u * want.size()) << "the first load and A's refill only";
  EXPECT_EQ(n.refill_bytes, want.size());
  EXPECT_EQ(n.misses, 1u);
  EXPECT_EQ(n.hits, 2u) << "B and C; A's hit became its refill";
  EXPECT_EQ(n.refills, 1u);
  EXPECT_EQ(n.coalesced, 0u);
  EXPECT_EQ(n.handovers, 2u);
  EXPECT_EQ(f.cache->ram().handed_objects(), 1u) << "one copy: the kernel's";

  // Without kernel_holds (an inode the kernel holds nothing of) the stub is
  // read again from LOWER at the open, a refill for the policy: the bytes
  // are the open's, its READs send the kernel every page of them.
  auto d = f.cache->Get(req);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d.value()->handed_over);
  EXPECT_EQ(bytes(d.value()), want);
  n = f.cache->counters();
  EXPECT_EQ(n.bytes_read_lower, 3u * want.size());
  EXPECT_EQ(n.refills, 2u);
}

// Bytes on LOWER rewritten in place with the size and mtime put back: another
// version all the same (its ctime moved; the version had only size, mtime
// and inode before). A read of the version handed over gets the new bytes
// under their own version, for its caller to refuse (an open: ESTALE), never
// under the old one; the next open, of the new version, drops the stub (an
// invalidation) and is a miss of the new bytes.
TEST(CacheFront, AFileRewrittenInPlaceWithItsMtimePutBackIsAnotherVersion) {
  Front f(1 << 20);
  f.dir.Write("h", 4000, 4);
  GetRequest req = f.Req("h", 9);
  auto r1 = f.cache->Get(req);
  ASSERT_TRUE(r1.ok());
  ASSERT_TRUE(f.cache->HandOver(r1.value()));
  struct stat st;
  ASSERT_EQ(::stat((f.dir.path() + "/h").c_str(), &st), 0);
  std::string other = f.dir.Write("h", 4000, 5);  // rewritten in place
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (f.dir.path() + "/h").c_str(), times, 0), 0);
  const GetRequest fresh = f.Req("h", 9);
  ASSERT_EQ(fresh.version.size, req.version.size);
  ASSERT_EQ(fresh.version.mtime_ns, req.version.mtime_ns);
  ASSERT_NE(fresh.version, req.version) << "the ctime tells them apart";
  auto r2 = f.cache->Get(req);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(std::string(r2.value()->data.begin(), r2.value()->data.end()), other);
  EXPECT_EQ(r2.value()->version, fresh.version) << "never the new bytes under the old version";
  auto r3 = f.cache->Get(fresh);
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(std::string(r3.value()->data.begin(), r3.value()->data.end()), other);
  CacheCounters c = f.cache->counters();
  EXPECT_EQ(c.refills, 0u);
  EXPECT_EQ(c.invalidations, 1u);
  ObjectRef now = f.cache->ram().Find(9);
  ASSERT_TRUE(now);
  EXPECT_FALSE(now->handed_over);
  EXPECT_EQ(now->version, fresh.version);
  EXPECT_EQ(f.cache->ram().used(), 4000u);
}

// The bytes handed over, found by a refill under another version (an
// identical copy renamed over the file: another inode number, as a LOWER
// that numbers its inodes anew gives an unchanged file): put back in the
// stub's place under the version handed over, not dropped.
TEST(CacheFront, ARefillOfTheSameBytesUnderAnotherInodeNumberIsARefill) {
  Front f(1 << 20);
  const std::string want = f.dir.Write("h", 4000, 4);
  GetRequest req = f.Req("h", 9);
  auto r1 = f.cache->Get(req);
  ASSERT_TRUE(r1.ok());
  ASSERT_TRUE(f.cache->HandOver(r1.value()));
  struct stat st;
  ASSERT_EQ(::stat((f.dir.path() + "/h").c_str(), &st), 0);
  ASSERT_EQ(f.dir.Write("h.new", 4000, 4), want);
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (f.dir.path() + "/h.new").c_str(), times, 0), 0);
  ASSERT_EQ(::rename((f.dir.path() + "/h.new").c_str(), (f.dir.path() + "/h").c_str()), 0);
  ASSERT_NE(f.Req("h", 9).version, req.version);
  ASSERT_TRUE(f.cache->HitHandedOver(req));  // an open of the version handed over
  GetRequest heard = req;
  heard.heard = true;
  heard.first_refill = true;  // its READ: the kernel lost the pages
  auto r2 = f.cache->Get(heard);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(std::string(r2.value()->data.begin(), r2.value()->data.end()), want);
  EXPECT_EQ(r2.value()->version, req.version);
  EXPECT_EQ(f.cache->ram().Find(9), r2.value());
  CacheCounters c = f.cache->counters();
  EXPECT_EQ(c.refills, 1u);
  EXPECT_EQ(c.hits, 0u) << "the open's hit was a refill";
  EXPECT_EQ(c.invalidations, 0u);
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.bytes_read_lower, 8000u);
  EXPECT_EQ(f.cache->ram().used(), 4000u);
}

TEST(CacheFront, VanishedFileIsNotFoundAndCounted) {
  Front f(1 << 20);
  f.dir.Write("gone", 10, 1);
  GetRequest req = f.Req("gone", 9);
  stdfs::remove(f.dir.path() + "/gone");
  auto r = f.cache->Get(req);
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_EQ(f.cache->counters().lower_errors, 1u);
  EXPECT_EQ(f.cache->ram().used(), 0u);
  EXPECT_EQ(f.cache->load_time().count, 1u) << "a failed load is timed too";
  EXPECT_EQ(f.cache->read_wait().count, 1u);
}

// Blocks of a file too large to cache whole: each an object of its own,
// exactly its range of the file, the last one short.
TEST(CacheFront, BlocksHoldTheirRangeAndTheLastIsShort) {
  Front f(1 << 20);
  const std::string want = f.dir.Write("big", 10'000, 3);
  const uint64_t b = 4096;
  GetRequest whole = f.Req("big", 0);
  std::string got;
  for (uint64_t k = 0; k * b < want.size(); ++k) {
    GetRequest g = whole;
    g.id = BlockIdOf("big", k * b, b);
    g.offset = k * b;
    g.length = b;
    auto r = f.cache->Get(g);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.value()->data.size(), std::min<uint64_t>(b, want.size() - k * b));
    got.append(r.value()->data.begin(), r.value()->data.end());
    auto again = f.cache->Get(g);  // resident now: a hit, the same bytes
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again.value().get(), r.value().get());
  }
  EXPECT_EQ(got, want);
  CacheCounters c = f.cache->counters();
  EXPECT_EQ(c.misses, 3u);
  EXPECT_EQ(c.hits, 3u);
  EXPECT_EQ(c.bytes_read_lower, want.size());
  EXPECT_EQ(f.cache->ram().used(), want.size());
  EXPECT_EQ(f.cache->ram().objects(), 3u);
  EXPECT_NE(BlockIdOf("big", 0, b), ObjectIdOf("big"));
  EXPECT_NE(BlockIdOf("big", 0, b), BlockIdOf("big", b, b));
  EXPECT_NE(BlockIdOf("big", 0, b), BlockIdOf("big", 0, 2 * b));
}

// A block of another version than the open's is Stale, never served: not a
// resident one of the old version, not a fresh one of the new.
TEST(CacheFront, BlocksOfAChangedFileAreStale) {
  Front f(1 << 20);
  const std::string old_bytes = f.dir.Write("big", 10'000, 3);
  GetRequest g = f.Req("big", BlockIdOf("big", 0, 4096));
  g.length = 4096;
  ASSERT_TRUE(f.cache->Get(g).ok());
  GetRequest g1 = g;
  g1.id = BlockIdOf("big", 4096, 4096);
  g1.offset = 4096;
  ::usleep(10'000);  // another mtime
  f.dir.Write("big", 10'000, 4);
  auto r = f.cache->Get(g1);  // not resident: loaded, and the file is another version
  EXPECT_EQ(r.status().code(), Code::kStale);
  // The block read before the change is still of the opened version: served.
  auto r0 = f.cache->Get(g);
  ASSERT_TRUE(r0.ok());
  EXPECT_EQ(std::string(r0.value()->data.begin(), r0.value()->data.end()),
            old_bytes.substr(0, 4096));
  // A new open (the new version) drops the old block and reads the new bytes.
  GetRequest fresh = f.Req("big", BlockIdOf("big", 0, 4096));
  fresh.length = 4096;
  auto r2 = f.cache->Get(fresh);
  ASSERT_TRUE(r2.ok());
  EXPECT_NE(std::string(r2.value()->data.begin(), r2.value()->data.end()),
            old_bytes.substr(0, 4096));
  EXPECT_EQ(f.cache->counters().invalidations, 1u);
  // Shorter than the opened version: Stale too.
  f.dir.Write("big", 5'000, 5);
  GetRequest tail = fresh;
  tail.id = BlockIdOf("big", 4096, 4096);
  tail.offset = 4096;
  EXPECT_EQ(f.cache->Get(tail).status().code(), Code::kStale);
}

}  // namespace
}  // namespace epochfs::store
