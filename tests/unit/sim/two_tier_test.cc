// Unit tests for the simulator's disk tier (sim/disk_model.h): its workload
// keys, the cost of a read from it, the daemon's placement rules as the
// engine plays them (the future policy: sooner in RAM, later on disk, beyond
// the disk's horizon not written; LRU and epoch: every load written), and
// the two-tier Belady reference never beaten on what it bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "epochfs/sim/engine.h"
#include "epochfs/sim/trace.h"
#include "epochfs/sim/workload.h"

namespace epochfs::sim::two_tier_test {

constexpr uint64_t kSize = 100 * 1024;

// One job over n objects of kSize bytes; RAM and disk given in objects.
Workload TwoTiers(uint32_t n, uint64_t ram_objects, uint64_t disk_objects, uint32_t epochs,
                  uint32_t loaders) {
  Workload w;
  w.seed = 3;
  w.prefetch = 0;  // the placements' own decisions; prefetch is asked for where it matters
  w.budget_bytes = ram_objects * kSize;
  w.storage.bandwidth = 16.0 * 1024 * 1024;
  w.storage.latency_ms = 2.0;
  w.storage.concurrency = 4;
  w.disk.size_bytes = disk_objects * kSize;
  w.disk.bandwidth = 200.0 * 1024 * 1024;
  w.disk.latency_ms = 0.3;
  JobSpecW j;
  j.name = "a";
  j.dataset = "a";
  j.samples = n;
  j.size.fixed = kSize;
  j.batch_size = 16;
  j.epochs = epochs;
  j.loaders = loaders;
  j.compute_ms = 10;
  w.jobs.push_back(j);
  return w;
}

RunResult MustRun(const Workload& w, PolicyKind k) {
  auto t = Trace::Make(w);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return {};
  EngineOptions opt;
  opt.check_every = 97;
  auto r = Run(t.value(), k, opt);
  EXPECT_TRUE(r.ok()) << PolicyKindName(k) << ": " << r.status().message();
  return r.ok() ? r.value() : RunResult{};
}

// Loads from LOWER: the misses not served from the disk, and the prefetches.
uint64_t LowerLoads(const RunResult& r) {
  uint64_t n = 0;
  for (const JobResult& j : r.jobs) n += j.misses - j.coalesced - j.disk_reads;
  return n + r.prefetch_bytes / kSize;
}

// What holds for every policy on a disk tier.
void CheckDisk(const Workload& w, const RunResult& r) {
  SCOPED_TRACE(r.policy);
  const uint64_t disk = w.disk.size_bytes;
  EXPECT_EQ(r.disk.budget_bytes, disk);
  EXPECT_LE(r.disk.max_used_bytes, disk);
  uint64_t disk_reads = 0;
  for (const JobResult& j : r.jobs) {
    uint64_t per_epoch = 0;
    for (const EpochResult& e : j.epochs) per_epoch += e.disk_reads;
    EXPECT_EQ(per_epoch, j.disk_reads);
    EXPECT_LE(j.disk_reads + j.coalesced, j.misses);
    EXPECT_EQ(j.epochs[0].disk_reads, 0u);  // nothing on disk before the first load
    disk_reads += j.disk_reads;
  }
  EXPECT_GE(r.disk.reads, disk_reads);  // and the prefetches that moved objects up
  EXPECT_EQ(r.disk.bytes_read, r.disk.reads * kSize);
  EXPECT_EQ(r.disk.bytes_written, r.disk.writes * kSize);
  EXPECT_EQ(r.bytes_read, LowerLoads(r) * kSize);  // bytes from the disk are not LOWER's
}

TEST(TwoTierWorkload, ParsesTheDiskTable) {
  const std::string base = R"(budget = "25%"
[storage]
bandwidth = "16MiB"
[[job]]
name = "a"
samples = 100
size = "1KiB"
batch_size = 4
epochs = 2
)";
  auto none = ParseWorkload(base, "w.toml");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_FALSE(none.value().disk.enabled());
  EXPECT_EQ(Trace::Make(none.value()).value().disk_budget(), 0u);

  auto w = ParseWorkload(base + "[disk]\nsize = \"150%\"\nbandwidth = \"1GiB\"\nlatency_ms = 0.1\n",
                         "w.toml");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_TRUE(w.value().disk.enabled());
  EXPECT_DOUBLE_EQ(w.value().disk.bandwidth, 1024.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(w.value().disk.latency_ms, 0.1);
  EXPECT_EQ(Trace::Make(w.value()).value().disk_budget(), 150u * 1024);  // 150 % of 100 KiB

  auto bytes = ParseWorkload(base + "[disk]\nsize = \"2MiB\"\nbandwidth = 1000\n", "w.toml");
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(Trace::Make(bytes.value()).value().disk_budget(), 2u * 1024 * 1024);
  EXPECT_DOUBLE_EQ(bytes.value().disk.latency_ms, 0.0);

  auto error = [&](const std::string& disk) {
    auto r = ParseWorkload(base + disk, "w.toml");
    EXPECT_FALSE(r.ok()) << disk;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(error("[disk]\nbandwidth = \"1GiB\"\n").find("disk.size"), std::string::npos);
  EXPECT_NE(error("[disk]\nsize = \"1GiB\"\n").find("disk.bandwidth"), std::string::npos);
  EXPECT_NE(error("[disk]\nsize = \"0%\"\nbandwidth = 1\n").find("disk.size (line 11)"),
            std::string::npos);
  EXPECT_NE(error("[disk]\nsize = 1\nbandwidth = 1\niops = 3\n").find("disk.iops"),
            std::string::npos);
  auto scalar = ParseWorkload("disk = 3\n" + base, "w.toml");
  ASSERT_FALSE(scalar.ok());
  EXPECT_NE(scalar.status().message().find("expected a table [disk]"), std::string::npos);
}

// No RAM cache, one loader, no compute, a disk that holds everything:
// after the first epoch every read is a disk read, latency then bytes at the
// disk's bandwidth, one after the other.
TEST(TwoTierEngine, ADiskReadCostsLatencyThenBytes) {
  Workload w = TwoTiers(200, 8, 200, 3, 1);  // RAM: objects up to a quarter of it are cached
  w.jobs[0].compute_ms = 0;
  w.disk.bandwidth = 100e6;  // 102 400 B in 1.024 ms
  w.disk.latency_ms = 0.5;
  const RunResult r = MustRun(w, PolicyKind::kNone);
  CheckDisk(w, r);
  for (size_t e = 1; e < 3; ++e) {
    EXPECT_EQ(r.jobs[0].epochs[e].disk_reads, 200u);
    EXPECT_EQ(r.jobs[0].epochs[e].time_ns, 200u * (500'000 + 1'024'000)) << "epoch " << e;
  }
  EXPECT_EQ(r.bytes_read, 200u * kSize);  // LOWER read once
  EXPECT_EQ(r.disk.writes, 200u);
}

// The future policy's placement as the simulator plays it: RAM holds the
// soonest next reads, the disk the next ones within its size (inclusive of
// RAM's), and a load whose next read lies beyond what the disk holds is not
// written. One job reading a permutation per epoch: from epoch 1 on, RAM's
// objects hit, the disk serves the disk's minus RAM's, LOWER the rest.
TEST(TwoTierEngine, SoonerInRamLaterOnDiskBeyondNotWritten) {
  for (uint32_t loaders : {1u, 2u, 4u}) {
    SCOPED_TRACE("loaders " + std::to_string(loaders));
    const Workload w = TwoTiers(1000, 200, 400, 4, loaders);
    const RunResult f = MustRun(w, PolicyKind::kFuture);
    CheckDisk(w, f);
    for (size_t e = 1; e < 4; ++e) {
      EXPECT_EQ(f.jobs[0].epochs[e].hits, 200u) << "epoch " << e;
      EXPECT_EQ(f.jobs[0].epochs[e].disk_reads, 200u) << "epoch " << e;
    }
    EXPECT_EQ(LowerLoads(f), 1000u + 3 * 600);
    // Every load from LOWER was offered to the disk once; the last epoch's
    // (no next read) and every load read later than the disk's horizon
    // were not written.
    EXPECT_EQ(f.disk.writes + f.disk.skipped, LowerLoads(f));
    EXPECT_GE(f.disk.skipped, 600u);

    // LRU on both tiers writes every load, and its disk serves less.
    const RunResult l = MustRun(w, PolicyKind::kLru);
    CheckDisk(w, l);
    EXPECT_EQ(l.disk.writes, LowerLoads(l));
    EXPECT_EQ(l.disk.skipped, 0u);
    EXPECT_GT(l.disk.bytes_written, f.disk.bytes_written);
    EXPECT_LT(l.jobs[0].disk_reads, f.jobs[0].disk_reads);
  }
}

// Reads nobody declared (here: files whose declared reads are over) use the
// space no declaration needs, least recently read first, as in the daemon:
// one epoch and a disk with room for all of it, so the future policy writes
// every load, as LRU does. (With a disk full of sooner reads they are not
// written: the test above.)
TEST(TwoTierEngine, UndeclaredReadsUseIdleSpace) {
  const Workload w = TwoTiers(500, 100, 1000, 1, 2);
  const RunResult f = MustRun(w, PolicyKind::kFuture);
  CheckDisk(w, f);
  EXPECT_EQ(f.disk.writes, 500u);
  EXPECT_EQ(f.disk.skipped, 0u);
  // A disk for a fifth of it: the last 100 loads read, the older let go.
  const Workload small = TwoTiers(500, 100, 100, 1, 2);
  const RunResult s = MustRun(small, PolicyKind::kFuture);
  CheckDisk(small, s);
  EXPECT_EQ(s.disk.writes, 500u);
  EXPECT_EQ(s.disk.evictions, 400u);
}

// "epoch" keeps its regions in RAM; its disk is an LRU victim tier below
// them: every load from LOWER written, least recently read evicted.
TEST(TwoTierEngine, EpochPolicyWritesEveryLoad) {
  const Workload w = TwoTiers(600, 150, 1200, 3, 2);
  const RunResult r = MustRun(w, PolicyKind::kEpoch);
  CheckDisk(w, r);
  EXPECT_EQ(r.disk.writes, LowerLoads(r));
  EXPECT_EQ(r.disk.skipped, 0u);
  EXPECT_EQ(r.disk.writes, 600u);  // the disk holds the dataset: LOWER read once
  EXPECT_EQ(r.disk.evictions, 0u);
  for (size_t e = 1; e < 3; ++e) {
    EXPECT_EQ(r.jobs[0].epochs[e].hits + r.jobs[0].epochs[e].disk_reads, 600u);
  }
}

// The two-tier Belady (exclusive: RAM the soonest next uses, the disk the
// next, beyond neither) is MIN over RAM + disk for one job of equal sizes:
// from epoch 1 on exactly min(n, R + D) objects per epoch are served without
// LOWER, and no policy loads fewer bytes from LOWER, prefetch included.
TEST(TwoTierEngine, BeladyIsNeverBeatenOnOneJob) {
  int runs = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Rng rng(seed);
    const uint32_t n = 100 + uint32_t(rng.Below(400));
    const uint64_t ram = 4 + rng.Below(n / 2);
    const uint64_t disk = rng.Below(2) == 0 ? ram + rng.Below(n) : rng.Below(ram + 1);
    Workload w = TwoTiers(n, ram, disk, 2 + uint32_t(rng.Below(3)), 1 + uint32_t(rng.Below(4)));
    w.seed = seed;
    w.prefetch = uint32_t(rng.Below(5));
    w.jobs[0].compute_ms = double(rng.Below(20));
    w.disk.bandwidth = double(20 + rng.Below(500)) * 1e6;
    SCOPED_TRACE("seed " + std::to_string(seed));
    const RunResult best = MustRun(w, PolicyKind::kBelady);
    if (disk != 0) CheckDisk(w, best);
    const uint64_t kept = std::min<uint64_t>(n, ram + disk);
    for (size_t e = 1; e < best.jobs[0].epochs.size(); ++e) {
      const EpochResult& ep = best.jobs[0].epochs[e];
      EXPECT_EQ(ep.hits, ram) << "epoch " << e;
      EXPECT_EQ(ep.hits + ep.disk_reads, kept) << "epoch " << e;
    }
    for (PolicyKind k : {PolicyKind::kNone, PolicyKind::kLru, PolicyKind::kMinio,
                         PolicyKind::kEpoch, PolicyKind::kFuture}) {
      const RunResult r = MustRun(w, k);
      if (disk != 0) CheckDisk(w, r);
      EXPECT_LE(best.bytes_read, r.bytes_read) << PolicyKindName(k);
      ++runs;
    }
  }
  EXPECT_EQ(runs, 300);
}

// On a small workload where the disk holds part of the data and no policy
// prefetches, the two-tier Belady also stalls least.
TEST(TwoTierEngine, BeladyStallsLeastWithoutPrefetch) {
  const Workload w = TwoTiers(1000, 200, 400, 4, 2);
  const RunResult best = MustRun(w, PolicyKind::kBelady);
  for (PolicyKind k : {PolicyKind::kNone, PolicyKind::kLru, PolicyKind::kMinio,
                       PolicyKind::kEpoch, PolicyKind::kFuture}) {
    const RunResult r = MustRun(w, k);
    CheckDisk(w, r);
    EXPECT_LE(best.total_stall_ns, r.total_stall_ns) << PolicyKindName(k);
    EXPECT_LE(best.bytes_read, r.bytes_read) << PolicyKindName(k);
  }
}

// The shipped two-tier workloads: the default policy stalls no more than LRU
// on two tiers (what scripts/bench/sim-grid checks at every budget).
TEST(TwoTierEngine, ShippedWorkloads) {
  const std::string dir = EPOCHFS_SOURCE_DIR "/conf/sim/";
  for (const char* f : {"tiers_one_job.toml", "tiers_jobs.toml", "tiers_shards.toml"}) {
    SCOPED_TRACE(f);
    auto w = LoadWorkloadFile(dir + f);
    ASSERT_TRUE(w.ok()) << w.status().message();
    ASSERT_TRUE(w.value().disk.enabled());
    auto t = Trace::Make(w.value());
    ASSERT_TRUE(t.ok());
    EXPECT_GT(t.value().distinct_bytes(), t.value().budget());       // larger than RAM
    EXPECT_GE(t.value().disk_budget(), t.value().distinct_bytes());  // fits the disk
    auto lru = sim::Run(t.value(), PolicyKind::kLru);
    auto future = sim::Run(t.value(), PolicyKind::kFuture);
    ASSERT_TRUE(lru.ok() && future.ok());
    EXPECT_LE(future.value().total_stall_ns, lru.value().total_stall_ns);
    EXPECT_GT(future.value().disk.reads, 0u);
  }
}

}  // namespace epochfs::sim::two_tier_test
