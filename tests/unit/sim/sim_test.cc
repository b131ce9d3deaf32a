// Unit tests for src/sim: the workload parser, the trace, and the engine pinned
// to closed forms and orderings (no cache gives no hits, MinIO keeps C/s
// objects, Belady is never beaten, results repeat for a seed).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "epochfs/sim/engine.h"
#include "epochfs/sim/report.h"
#include "epochfs/sim/trace.h"
#include "epochfs/sim/workload.h"

namespace epochfs::sim {
namespace {

constexpr const char* kExample = R"(seed = 1
budget = "40%"            # bytes ("2GiB") or a percentage of the distinct data of all jobs
[storage]
bandwidth = "8MiB"        # bytes per second, all channels together
latency_ms = 2.0          # per request
concurrency = 4           # requests in flight
iops = 300                # optional, 0 = unlimited
[[job]]
name = "a"
dataset = "a"             # optional; jobs with the same dataset share objects
samples = 2000
size = "110KiB"
batch_size = 32
epochs = 4
loaders = 2
compute_ms = 20           # per batch
start_s = 0.0
)";

Workload Parse(const std::string& text) {
  auto w = ParseWorkload(text, "w.toml");
  EXPECT_TRUE(w.ok()) << w.status().message();
  return w.ok() ? w.value() : Workload{};
}

std::string ParseError(const std::string& text) {
  auto w = ParseWorkload(text, "w.toml");
  EXPECT_FALSE(w.ok());
  return w.ok() ? "" : w.status().message();
}

// --- workload -------------------------------------------------------------

TEST(Workload, ParsesTheDocumentedExample) {
  Workload w = Parse(kExample);
  EXPECT_EQ(w.seed, 1u);
  EXPECT_TRUE(w.budget_is_percent);
  EXPECT_DOUBLE_EQ(w.budget_percent, 40.0);
  EXPECT_DOUBLE_EQ(w.storage.bandwidth, 8.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(w.storage.latency_ms, 2.0);
  EXPECT_EQ(w.storage.concurrency, 4u);
  EXPECT_DOUBLE_EQ(w.storage.iops, 300.0);
  ASSERT_EQ(w.jobs.size(), 1u);
  const JobSpecW& j = w.jobs[0];
  EXPECT_EQ(j.name, "a");
  EXPECT_EQ(j.dataset, "a");
  EXPECT_EQ(j.samples, 2000u);
  EXPECT_EQ(j.size.dist, SizeSpec::Dist::kFixed);
  EXPECT_EQ(j.size.fixed, 110u * 1024);
  EXPECT_EQ(j.batch_size, 32u);
  EXPECT_EQ(j.epochs, 4u);
  EXPECT_EQ(j.loaders, 2u);
  EXPECT_DOUBLE_EQ(j.compute_ms, 20.0);
  EXPECT_FALSE(j.report_compute);
  EXPECT_FALSE(w.weigh_hits);  // the daemon's default
  std::string weighed = kExample;
  weighed.insert(weighed.find("[storage]"), "weigh_hits = true\n");
  EXPECT_TRUE(Parse(weighed).weigh_hits);
  weighed.replace(weighed.find("weigh_hits = true"), 17, "weigh_hits = 1");
  const std::string e = ParseError(weighed);
  EXPECT_NE(e.find("weigh_hits (line 3): expected true or false"), std::string::npos) << e;
}

TEST(Workload, SizeTablesAndByteBudget) {
  Workload w = Parse(R"(budget = "2GiB"
[storage]
bandwidth = 1000
[[job]]
name = "u"
samples = 10
size = { dist = "uniform", min = "50KiB", max = "200KiB" }
batch_size = 2
epochs = 1
[[job]]
name = "l"
samples = 10
size = { dist = "lognormal", mean = "110KiB", sigma = 0.5 }
batch_size = 2
epochs = 1
)");
  EXPECT_FALSE(w.budget_is_percent);
  EXPECT_EQ(w.budget_bytes, uint64_t{2} << 30);
  EXPECT_EQ(w.jobs[0].size.dist, SizeSpec::Dist::kUniform);
  EXPECT_EQ(w.jobs[0].size.min, 50u * 1024);
  EXPECT_EQ(w.jobs[0].size.max, 200u * 1024);
  EXPECT_EQ(w.jobs[1].size.dist, SizeSpec::Dist::kLognormal);
  EXPECT_EQ(w.jobs[1].size.mean, 110u * 1024);
  EXPECT_DOUBLE_EQ(w.jobs[1].size.sigma, 0.5);
  EXPECT_EQ(w.jobs[0].dataset, "u");  // default: the job's own data
  EXPECT_EQ(w.jobs[0].loaders, 1u);
}

TEST(Workload, ErrorsNameKeyAndLine) {
  std::string text = kExample;
  text.replace(text.find("\"110KiB\""), 8, "\"110 parsecs\"");
  std::string e = ParseError(text);
  EXPECT_NE(e.find("w.toml: job[0].size (line 12)"), std::string::npos) << e;

  e = ParseError(std::string(kExample) + "colour = \"blue\"\n");
  EXPECT_NE(e.find("job[0].colour (line 18): unknown key"), std::string::npos) << e;

  text = kExample;
  text.replace(text.find("batch_size = 32"), 15, "batch_size = 0");
  e = ParseError(text);
  EXPECT_NE(e.find("job[0].batch_size (line 13): must be in [1,"), std::string::npos) << e;

  text = kExample;
  text.replace(text.find("budget = \"40%\""), 14, "budget = \"-3%\"");
  e = ParseError(text);
  EXPECT_NE(e.find("budget (line 2)"), std::string::npos) << e;

  e = ParseError("budget = \"1GiB\"\n[storage]\nbandwidth = 1\n");
  EXPECT_NE(e.find("job"), std::string::npos) << e;

  e = ParseError("budget = = 3\n");
  EXPECT_NE(e.find("w.toml:1:"), std::string::npos) << e;

  text = kExample;
  text.erase(text.find("samples = 2000\n"), 15);
  e = ParseError(text);
  EXPECT_NE(e.find("job[0].samples"), std::string::npos) << e;
  EXPECT_NE(e.find("missing"), std::string::npos) << e;

  e = ParseError(std::string(kExample) +
                 "[[job]]\nname = \"b\"\ndataset = \"a\"\nsamples = 10\n"
                 "size = 1\nbatch_size = 1\nepochs = 1\n");
  EXPECT_NE(e.find("job[1].dataset: 'a' is shared with job 'a'"), std::string::npos) << e;

  e = ParseError(std::string(kExample) +
                 "[[job]]\nname = \"a\"\nsamples = 10\n"
                 "size = 1\nbatch_size = 1\nepochs = 1\n");
  EXPECT_NE(e.find("job[1].name: 'a' is used by an earlier job"), std::string::npos) << e;
}

// --- trace ----------------------------------------------------------------

TEST(Trace, OrdersArePermutationsAndRepeat) {
  Workload w = Parse(kExample);
  auto t = Trace::Make(w);
  ASSERT_TRUE(t.ok());
  std::vector<uint32_t> o0 = t.value().Order(0, 0);
  std::vector<uint32_t> o1 = t.value().Order(0, 1);
  EXPECT_EQ(std::set<uint32_t>(o0.begin(), o0.end()).size(), 2000u);
  EXPECT_EQ(*std::max_element(o0.begin(), o0.end()), 1999u);
  EXPECT_NE(o0, o1);
  EXPECT_EQ(o0, t.value().Order(0, 0));
  // 40% of 2000 × 110 KiB.
  EXPECT_EQ(t.value().distinct_bytes(), 2000u * 110 * 1024);
  EXPECT_EQ(t.value().budget(), 800u * 110 * 1024);
}

// ranks = R expands to R jobs that split one shuffle per epoch: together they
// read every sample exactly once, each its stride of the run's permutation.
TEST(Trace, RanksSplitOneShuffle) {
  Workload w = Parse(std::string(kExample) + "ranks = 3\n");
  ASSERT_EQ(w.jobs.size(), 3u);
  auto t = Trace::Make(w);
  ASSERT_TRUE(t.ok()) << t.status().message();
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(w.jobs[r].name, "a.rank" + std::to_string(r));
    EXPECT_EQ(w.jobs[r].run, "a");
    EXPECT_EQ(w.jobs[r].dataset, "a");
    EXPECT_EQ(t.value().dataset_of(r), 0u);
  }
  for (uint32_t e = 0; e < 3; ++e) {
    std::vector<uint32_t> all;
    std::vector<std::vector<uint32_t>> shard(3);
    for (uint32_t r = 0; r < 3; ++r) {
      shard[r] = t.value().Order(r, e);
      EXPECT_EQ(shard[r].size(), 667u);  // padded: 2001 = 3 x 667
      EXPECT_EQ(std::set<uint32_t>(shard[r].begin(), shard[r].end()).size(), 667u);
      all.insert(all.end(), shard[r].begin(), shard[r].end());
    }
    // Every sample once, and the padding: the shuffle's first index again.
    EXPECT_EQ(shard[2].back(), shard[0].front());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    ASSERT_EQ(all.size(), 2000u);
    EXPECT_EQ(all.back(), 1999u);
    // Interleaved, the shards are one permutation: position i of rank r is
    // position r + 3i of the run's shuffle; other epochs shuffle otherwise.
    EXPECT_NE(shard[0], t.value().Order(0, e + 1));
  }
  EXPECT_NE(ParseError(std::string(kExample) + "ranks = 0\n").find("job[0].ranks (line"),
            std::string::npos);
}

TEST(Trace, SizeDistributions) {
  Workload w = Parse(R"(budget = 1
[storage]
bandwidth = 1
[[job]]
name = "u"
samples = 20000
size = { dist = "uniform", min = 100, max = 300 }
batch_size = 1
epochs = 1
[[job]]
name = "l"
samples = 20000
size = { dist = "lognormal", mean = 100000, sigma = 0.5 }
batch_size = 1
epochs = 1
)");
  auto t = Trace::Make(w);
  ASSERT_TRUE(t.ok());
  const auto& u = t.value().datasets()[0];
  EXPECT_EQ(*std::min_element(u.sizes.begin(), u.sizes.end()), 100u);
  EXPECT_EQ(*std::max_element(u.sizes.begin(), u.sizes.end()), 300u);
  EXPECT_NEAR(double(u.total_bytes) / 20000, 200.0, 3.0);
  const auto& l = t.value().datasets()[1];
  EXPECT_NEAR(double(l.total_bytes) / 20000, 100000.0, 2000.0);  // the mean is the mean
  EXPECT_NE(l.sizes[0], l.sizes[1]);
}

// --- engine ---------------------------------------------------------------

Workload OneJob(uint32_t n, uint64_t size, uint32_t batch, uint32_t epochs, uint32_t loaders,
                double compute_ms, uint64_t budget) {
  Workload w;
  w.seed = 7;
  w.prefetch = 0;  // the policies' own decisions; prefetch has its tests
  w.budget_bytes = budget;
  w.storage.bandwidth = 100e6;
  w.storage.latency_ms = 1.0;
  w.storage.concurrency = 2;
  JobSpecW j;
  j.name = "j";
  j.dataset = "j";
  j.samples = n;
  j.size.fixed = size;
  j.batch_size = batch;
  j.epochs = epochs;
  j.loaders = loaders;
  j.compute_ms = compute_ms;
  w.jobs.push_back(j);
  return w;
}

RunResult MustRun(const Workload& w, PolicyKind k) {
  auto t = Trace::Make(w);
  EXPECT_TRUE(t.ok()) << t.status().message();
  EngineOptions opt;
  opt.check_every = 97;
  auto r = Run(t.value(), k, opt);
  EXPECT_TRUE(r.ok()) << PolicyKindName(k) << ": " << r.status().message();
  return r.ok() ? r.value() : RunResult{};
}

// Every figure adds up, for any policy and workload.
void CheckConsistent(const Trace& t, const RunResult& r) {
  const Workload& w = t.workload();
  ASSERT_EQ(r.jobs.size(), w.jobs.size());
  uint64_t acc = 0, hits = 0, stall = 0, bytes = 0;
  uint64_t first = ~uint64_t{0}, last = 0;
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobResult& j = r.jobs[i];
    SCOPED_TRACE(r.policy + " job " + j.name);
    const uint64_t reads = t.Order(i, 0).size();  // per epoch: samples, or a rank's shard
    EXPECT_EQ(j.accesses, reads * w.jobs[i].epochs);
    EXPECT_EQ(j.hits + j.misses, j.accesses);
    // Joining a load in flight, a reader's or a prefetch's, is a miss: the
    // reader waited for storage.
    EXPECT_LE(j.coalesced, j.misses);
    ASSERT_EQ(j.epochs.size(), w.jobs[i].epochs);
    uint64_t eh = 0, em = 0, es = 0, et = 0;
    uint64_t prev_end = j.start_ns;
    for (const EpochResult& e : j.epochs) {
      EXPECT_EQ(e.hits + e.misses, reads);
      EXPECT_EQ(e.start_ns, prev_end);  // epoch K+1 starts when K ends
      prev_end = e.start_ns + e.time_ns;
      EXPECT_LE(e.stall_ns, e.time_ns);
      eh += e.hits;
      em += e.misses;
      es += e.stall_ns;
      et += e.time_ns;
    }
    EXPECT_EQ(eh, j.hits);
    EXPECT_EQ(em, j.misses);
    EXPECT_EQ(es, j.stall_ns);
    EXPECT_EQ(j.completion_ns, j.start_ns + et);
    // Compute time is at least batches × compute per batch.
    const uint64_t batches = (reads + w.jobs[i].batch_size - 1) / w.jobs[i].batch_size;
    EXPECT_GE(et - es + 1000,
              uint64_t(double(batches) * w.jobs[i].epochs * w.jobs[i].compute_ms * 1e6));
    acc += j.accesses;
    hits += j.hits;
    stall += j.stall_ns;
    bytes += j.bytes_read;
    first = std::min(first, j.start_ns);
    last = std::max(last, j.completion_ns);
  }
  EXPECT_EQ(r.accesses, acc);
  EXPECT_EQ(r.hits, hits);
  EXPECT_EQ(r.misses, acc - hits);
  EXPECT_EQ(r.total_stall_ns, stall);
  EXPECT_EQ(r.bytes_read, bytes + r.prefetch_bytes);
  EXPECT_LE(r.prefetch_hits + r.prefetch_wasted, r.prefetched);
  if (w.prefetch == 0 || r.policy != "future") {
    EXPECT_EQ(r.prefetch_bytes, 0u);
  }
  EXPECT_EQ(r.makespan_ns, last - first);
  EXPECT_LE(r.max_resident_bytes, t.budget());
}

TEST(Engine, NoCacheHasNoHitsAndReadsEverything) {
  Workload w = OneJob(500, 4096, 16, 3, 2, 1.0, 500 * 4096);
  RunResult r = MustRun(w, PolicyKind::kNone);
  EXPECT_EQ(r.hits, 0u);
  EXPECT_EQ(r.bytes_read, 3u * 500 * 4096);
  EXPECT_EQ(r.admissions, 0u);
}

// No cache, one loader, one channel, no compute: every epoch is N requests of
// latency + size/bandwidth back to back, and compute waits for all of it.
TEST(Engine, NoCacheTimeIsTheSumOfRequests) {
  Workload w = OneJob(300, 100000, 10, 2, 1, 0.0, 0);
  w.storage.concurrency = 1;
  w.storage.latency_ms = 2.0;
  w.storage.bandwidth = 50e6;  // 100 000 B in 2 ms
  RunResult r = MustRun(w, PolicyKind::kNone);
  const uint64_t per = 2'000'000 + 2'000'000;
  for (const EpochResult& e : r.jobs[0].epochs) {
    EXPECT_EQ(e.time_ns, 300 * per);
    EXPECT_EQ(e.stall_ns, 300 * per);
  }
}

// Compute-bound, one loader: batch k+1 loads while k computes, so an epoch is
// the first batch's load plus batches × compute, and only that first load stalls.
TEST(Engine, ComputeBoundEpochClosedForm) {
  Workload w = OneJob(100, 100000, 10, 2, 1, 50.0, 0);
  w.storage.concurrency = 1;
  w.storage.latency_ms = 2.0;
  w.storage.bandwidth = 50e6;
  RunResult r = MustRun(w, PolicyKind::kNone);
  const uint64_t batch_load = 10 * 4'000'000;  // 40 ms < 50 ms of compute
  for (const EpochResult& e : r.jobs[0].epochs) {
    EXPECT_EQ(e.time_ns, batch_load + 10 * 50'000'000ull);
    EXPECT_EQ(e.stall_ns, batch_load);
  }
}

// MinIO on one job with equal sizes: epoch 0 misses everything and admits
// the first C/s objects; every later epoch hits exactly those: C/N.
TEST(Engine, MinioHitRatioIsCOverNAfterEpochZero) {
  for (uint32_t loaders : {1u, 3u}) {
    for (uint64_t cap : {100u, 250u, 399u}) {
      Workload w = OneJob(1000, 2000, 8, 4, loaders, 2.0, cap * 2000 + 1999);
      RunResult r = MustRun(w, PolicyKind::kMinio);
      const JobResult& j = r.jobs[0];
      EXPECT_EQ(j.epochs[0].hits, 0u);
      for (size_t e = 1; e < j.epochs.size(); ++e) {
        EXPECT_EQ(j.epochs[e].hits, cap) << "epoch " << e << " loaders " << loaders;
      }
      EXPECT_EQ(r.evictions, 0u);
      EXPECT_EQ(r.admissions, cap);
    }
  }
}

// One job reading permutations: an object not in the cache when an epoch
// begins cannot hit during it (read once per epoch), so no policy beats C/s
// hits per epoch, and Belady (like MinIO) reaches it.
TEST(Engine, BeladyReachesCPerEpochOnOneJob) {
  Workload w = OneJob(1000, 2000, 8, 5, 2, 2.0, 300 * 2000);
  RunResult r = MustRun(w, PolicyKind::kBelady);
  for (size_t e = 1; e < r.jobs[0].epochs.size(); ++e) {
    EXPECT_EQ(r.jobs[0].epochs[e].hits, 300u);
  }
  for (PolicyKind k : {PolicyKind::kLru, PolicyKind::kEpoch}) {
    RunResult o = MustRun(w, k);
    for (size_t e = 0; e < o.jobs[0].epochs.size(); ++e) {
      EXPECT_LE(o.jobs[0].epochs[e].hits, 300u) << PolicyKindName(k);
    }
  }
}

TEST(Engine, EnoughBudgetHitsEverythingAfterEpochZero) {
  Workload w = OneJob(400, 3000, 8, 3, 2, 1.0, 400 * 3000 * 4);
  for (PolicyKind k : {PolicyKind::kLru, PolicyKind::kMinio, PolicyKind::kBelady}) {
    RunResult r = MustRun(w, k);
    EXPECT_EQ(r.jobs[0].epochs[0].hits, 0u);
    EXPECT_EQ(r.hits, 2u * 400) << PolicyKindName(k);
  }
}

// A random workload: 1–3 jobs, some sharing a dataset, fixed or varied sizes,
// random batch, loaders, compute, start times, storage and budget.
Workload RandomWorkload(uint64_t seed, bool uniform_sizes) {
  Rng rng(seed);
  Workload w;
  w.seed = seed;
  w.budget_is_percent = true;
  w.budget_percent = 10 + double(rng.Below(70));
  w.storage.bandwidth = double(1 + rng.Below(50)) * 1e6;
  w.storage.latency_ms = double(rng.Below(5));
  w.storage.concurrency = 1 + uint32_t(rng.Below(4));
  w.storage.iops = rng.Below(3) == 0 ? double(200 + rng.Below(2000)) : 0.0;
  // From the seed, not the stream: the workloads stay those of the seeds
  // the tests below were written against.
  w.prefetch = seed % 2 == 0 ? 0 : uint32_t(1 + seed % 7);
  const uint32_t jobs = 1 + uint32_t(rng.Below(3));
  uint32_t shared_n = 50 + uint32_t(rng.Below(300));
  SizeSpec shared_size;
  shared_size.fixed = 1000 + rng.Below(20000);
  for (uint32_t i = 0; i < jobs; ++i) {
    JobSpecW j;
    j.name = "j" + std::to_string(i);
    const bool share = i > 0 && rng.Below(2) == 0;
    j.dataset = share ? "shared" : j.name;
    if (i == 0) j.dataset = "shared";
    if (j.dataset == "shared") {
      j.samples = shared_n;
      j.size = shared_size;
    } else {
      j.samples = 50 + uint32_t(rng.Below(300));
      if (uniform_sizes) {
        j.size.fixed = shared_size.fixed;
      } else if (rng.Below(2) == 0) {
        j.size.dist = SizeSpec::Dist::kUniform;
        j.size.min = 500 + rng.Below(5000);
        j.size.max = j.size.min + rng.Below(40000);
      } else {
        j.size.dist = SizeSpec::Dist::kLognormal;
        j.size.mean = 2000 + rng.Below(30000);
        j.size.sigma = double(rng.Below(100)) / 100.0;
      }
    }
    j.batch_size = 1 + uint32_t(rng.Below(16));
    j.epochs = 1 + uint32_t(rng.Below(5));
    j.loaders = 1 + uint32_t(rng.Below(4));
    j.compute_ms = double(rng.Below(30));
    j.start_s = double(rng.Below(3));
    j.report_compute = rng.Below(2) == 0;
    w.jobs.push_back(j);
  }
  return w;
}

// Every policy's figures add up on random workloads.
TEST(Engine, RandomWorkloadsAreConsistent) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Workload w = RandomWorkload(seed, seed % 2 == 0);
    auto t = Trace::Make(w);
    ASSERT_TRUE(t.ok());
    for (PolicyKind k : AllPolicyKinds()) {
      SCOPED_TRACE("seed " + std::to_string(seed));
      CheckConsistent(t.value(), MustRun(w, k));
    }
  }
}

// Belady's bound, provable case: one job, equal sizes, any loaders, storage,
// compute and budget. An object absent when an epoch begins cannot hit in it
// (each is read once per epoch), so C/s hits per epoch bound every policy;
// Belady reaches it.
TEST(Engine, BeladyIsNeverBeatenOnOneJob) {
  int runs = 0;
  for (uint64_t seed = 100; seed < 400; ++seed) {
    Workload w = RandomWorkload(seed, true);
    w.prefetch = 0;  // the bound is on what a cache keeps, not on loading ahead
    w.jobs.resize(1);
    w.jobs[0].dataset = "shared";
    const RunResult best = MustRun(w, PolicyKind::kBelady);
    const Trace t = Trace::Make(w).value();
    const uint64_t size = w.jobs[0].size.fixed;
    const uint64_t cap = size <= std::min<uint64_t>(t.budget() / 4, 1ull << 30)
                             ? std::min<uint64_t>(t.budget() / size, w.jobs[0].samples)
                             : 0;  // larger than a quarter of the budget: streamed
    for (size_t e = 1; e < best.jobs[0].epochs.size(); ++e) {
      EXPECT_EQ(best.jobs[0].epochs[e].hits, cap) << "seed " << seed;
    }
    for (PolicyKind k :
         {PolicyKind::kNone, PolicyKind::kLru, PolicyKind::kMinio, PolicyKind::kEpoch}) {
      const RunResult r = MustRun(w, k);
      for (size_t e = 0; e < r.jobs[0].epochs.size(); ++e) {
        EXPECT_LE(r.jobs[0].epochs[e].hits, best.jobs[0].epochs[e].hits)
            << "seed " << seed << ": " << PolicyKindName(k) << " epoch " << e;
      }
      ++runs;
    }
  }
  EXPECT_EQ(runs, 1200);
}

// Several jobs (shared datasets, different paces and start times), equal sizes:
// the jobs' interleaving depends on the cache, so Belady compares next uses on
// estimated times and is a heuristic; on these 400 random workloads it is
// never beaten. (docs/simulator.md: in a sweep of 1500 seeds MinIO beat it once
// by 3 hits; with varied sizes, 10 times in 1500, by up to 11%; seed 463 by 18%.)
TEST(Engine, BeladyIsNeverBeatenOnRandomJobsWithEqualSizes) {
  int runs = 0;
  for (uint64_t seed = 100; seed < 500; ++seed) {
    Workload w = RandomWorkload(seed, true);
    // No read slots: they start Belady's misses in its own order (the job
    // with the least left first) and the others' in the order they asked,
    // and the comparison is of evictions over like interleavings.
    w.read_slots = 0;
    const RunResult best = MustRun(w, PolicyKind::kBelady);
    for (PolicyKind k :
         {PolicyKind::kNone, PolicyKind::kLru, PolicyKind::kMinio, PolicyKind::kEpoch}) {
      const RunResult r = MustRun(w, k);
      EXPECT_GE(best.hits, r.hits) << "seed " << seed << ": " << PolicyKindName(k);
      ++runs;
    }
  }
  EXPECT_EQ(runs, 1600);
}

// Read slots order the misses of different jobs, never a job's own nor
// those of jobs over one dataset (a load for one serves the other): a job
// alone, whose key rises and falls with its varied sizes, and three jobs
// sharing a dataset run exactly as with no slots. Two jobs over different
// datasets do not: the one nearer its end goes first.
TEST(Engine, ReadSlotsNeverHoldBackAJobsOwnLoadsNorItsSharers) {
  const std::string lone = R"(seed = 3
budget = "30%"
[storage]
bandwidth = "8MiB"
latency_ms = 1
concurrency = 6
[[job]]
name = "a"
samples = 400
size = { dist = "uniform", min = "8KiB", max = "160KiB" }
batch_size = 8
epochs = 3
loaders = 4
compute_ms = 5
)";
  std::string shared = lone;
  for (const char* name : {"b", "c"}) {
    shared += std::string("[[job]]\nname = \"") + name +
              "\"\ndataset = \"a\"\nsamples = 400\n"
              "size = { dist = \"uniform\", min = \"8KiB\", max = \"160KiB\" }\n"
              "batch_size = 8\nepochs = 2\nloaders = 4\ncompute_ms = 9\nstart_s = 0.5\n";
  }
  std::string apart = shared;
  apart.replace(apart.find("dataset = \"a\""), 13, "dataset = \"x\"");
  for (const std::string* text : std::vector<const std::string*>{&lone, &shared, &apart}) {
    Workload w = Parse(*text);
    w.read_slots = 0;
    const RunResult free = MustRun(w, PolicyKind::kFuture);
    w.read_slots = 1;
    const RunResult slotted = MustRun(w, PolicyKind::kFuture);
    if (text == &apart) {
      EXPECT_NE(slotted.total_stall_ns, free.total_stall_ns);
    } else {
      EXPECT_EQ(slotted.total_stall_ns, free.total_stall_ns) << (text == &lone ? "lone" : "shared");
      EXPECT_EQ(slotted.makespan_ns, free.makespan_ns);
      EXPECT_EQ(slotted.hits, free.hits);
    }
  }
}

TEST(Engine, SameSeedSameResultsOtherSeedOtherOrders) {
  Workload w = RandomWorkload(5, false);
  auto t1 = Trace::Make(w);
  auto t2 = Trace::Make(w);
  ASSERT_TRUE(t1.ok() && t2.ok());
  std::vector<RunResult> a, b;
  for (PolicyKind k : AllPolicyKinds()) {
    a.push_back(sim::Run(t1.value(), k).value());
    b.push_back(sim::Run(t2.value(), k).value());
  }
  const std::string ja = FormatJson(t1.value(), "w", a);
  EXPECT_EQ(ja, FormatJson(t2.value(), "w", b));
  EXPECT_EQ(FormatTable(t1.value(), "w", a), FormatTable(t2.value(), "w", b));
  w.seed = 6;
  auto t3 = Trace::Make(w);
  std::vector<RunResult> c;
  for (PolicyKind k : AllPolicyKinds()) c.push_back(sim::Run(t3.value(), k).value());
  EXPECT_NE(ja, FormatJson(t3.value(), "w", c));
}

// The ranks of one run share the cache as one job: under the future policy
// they hit as often as the same training run as a single job (global batch,
// all loaders), and at least as often as MinIO, on a tight and a loose budget.
TEST(Engine, RanksOfARunHitLikeOneJob) {
  for (uint64_t cap : {300u, 700u}) {
    SCOPED_TRACE(cap);
    Workload one = OneJob(1200, 4000, 8, 4, 4, 2.0, cap * 4000);
    Workload ranks = OneJob(1200, 4000, 2, 4, 1, 2.0, cap * 4000);
    ranks.jobs[0].ranks = 4;
    std::vector<JobSpecW> split;
    for (uint32_t r = 0; r < 4; ++r) {
      JobSpecW j = ranks.jobs[0];
      j.run = j.name;
      j.name += ".rank" + std::to_string(r);
      j.rank = r;
      split.push_back(j);
    }
    ranks.jobs = split;
    const RunResult a = MustRun(one, PolicyKind::kFuture);
    const RunResult b = MustRun(ranks, PolicyKind::kFuture);
    const RunResult m = MustRun(ranks, PolicyKind::kMinio);
    ASSERT_EQ(b.jobs.size(), 4u);
    EXPECT_EQ(b.accesses, a.accesses);
    for (uint32_t e = 1; e < 4; ++e) {
      uint64_t hits = 0;
      for (const JobResult& j : b.jobs) hits += j.epochs[e].hits;
      // One job holds `cap` objects of the next epoch: cap hits (MIN).
      EXPECT_EQ(a.jobs[0].epochs[e].hits, cap) << "epoch " << e;
      // The ranks run out of step, so their epochs overlap: a few more or
      // fewer than `cap`, within 10 %.
      EXPECT_GE(hits, cap * 9 / 10) << "epoch " << e;
      EXPECT_LE(hits, cap * 11 / 10) << "epoch " << e;
    }
    EXPECT_GE(b.hits, m.hits);
  }
}

// The shipped example workloads load and give consistent results (the
// ImageNet-scale one only loads: replaying it takes seconds per policy).
TEST(Engine, ShippedWorkloads) {
  const std::string dir = EPOCHFS_SOURCE_DIR "/conf/sim/";
  for (const char* f : {"small.toml", "three_jobs.toml", "ranks.toml", "ranks_single.toml",
                        "object_store.toml", "late_joiner.toml", "imagenet.toml"}) {
    SCOPED_TRACE(f);
    auto w = LoadWorkloadFile(dir + f);
    ASSERT_TRUE(w.ok()) << w.status().message();
    auto t = Trace::Make(w.value());
    ASSERT_TRUE(t.ok());
    if (std::string(f) == "imagenet.toml") {
      EXPECT_EQ(w.value().jobs.size(), 3u);
      EXPECT_EQ(w.value().jobs[0].samples, 1281167u);
      continue;
    }
    RunResult none;
    for (PolicyKind k : AllPolicyKinds()) {
      auto r = sim::Run(t.value(), k);
      ASSERT_TRUE(r.ok()) << r.status().message();
      CheckConsistent(t.value(), r.value());
      if (k == PolicyKind::kNone) none = r.value();
      if (k == PolicyKind::kBelady) {
        EXPECT_LE(r.value().total_stall_ns, none.total_stall_ns);
        EXPECT_LE(r.value().makespan_ns, none.makespan_ns);
      }
    }
  }
}

// Prefetch on a latency-bound store (an object store: 30 ms per request, 32
// in flight, bandwidth to spare): the future policy with prefetch stalls far
// less than without, and than every policy without it, Belady included.
TEST(Engine, PrefetchHidesTheLatencyOfAnObjectStore) {
  Workload w = OneJob(3000, 100'000, 32, 3, 4, 40.0, 1200 * 100'000);
  w.storage.latency_ms = 30.0;
  w.storage.concurrency = 32;
  w.storage.bandwidth = 1e9;
  w.prefetch = 24;
  // Requests bind, not bytes (30 ms x 1 GB/s): the prefetch rule lets a load
  // ahead displace whatever is read after it (FuturePolicy::MayDisplace).
  w.request_bytes = 30'000'000;
  w.request_bytes_auto = false;
  const RunResult with = MustRun(w, PolicyKind::kFuture);
  EXPECT_GT(with.prefetched, 1000u);
  EXPECT_GT(with.prefetch_hits, 1000u);
  w.prefetch = 0;
  for (PolicyKind k : AllPolicyKinds()) {
    const RunResult r = MustRun(w, k);
    EXPECT_EQ(r.prefetched, 0u);
    EXPECT_LT(with.total_stall_ns * 4, r.total_stall_ns) << PolicyKindName(k);
  }
}

// The late, fast joiner of conf/sim/late_joiner.toml gets hits: after its
// first epoch, every epoch hits at least 80 % (its dataset fits the budget).
TEST(Engine, TheLateJoinerGetsHits) {
  auto w = LoadWorkloadFile(EPOCHFS_SOURCE_DIR "/conf/sim/late_joiner.toml");
  ASSERT_TRUE(w.ok()) << w.status().message();
  for (uint32_t prefetch : {0u, 4u}) {
    SCOPED_TRACE(prefetch);
    w.value().prefetch = prefetch;
    const RunResult r = MustRun(w.value(), PolicyKind::kFuture);
    ASSERT_EQ(r.jobs.size(), 2u);
    const JobResult& probe = r.jobs[1];
    ASSERT_EQ(probe.name, "probe");
    for (size_t e = 1; e < probe.epochs.size(); ++e) {
      EXPECT_GE(probe.epochs[e].hits * 10, 3000u * 8) << "epoch " << e;
    }
  }
}

}  // namespace
}  // namespace epochfs::sim
