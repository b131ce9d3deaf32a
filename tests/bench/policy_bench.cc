// policy_bench: the cost of one cache decision.
//
// Replays 3 concurrent jobs (different dataset sizes, batch sizes, speeds),
// each reading its declared epoch orders, interleaved by a simulated clock,
// through the epoch policy and through LRU under the same byte budget (30% of
// the data). A shadow store (a hash set) turns each access into OnHit or
// OnMiss and applies the Decisions.
//
// Prints, per policy: ns per access for the whole replay loop (policy + shadow
// store + driver), and ns per OnHit/OnMiss call alone (each call timed with
// steady_clock, the clock's own overhead subtracted), plus the hit ratio.
//
// Usage: policy_bench [accesses_per_job]   (default 100000)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <unordered_set>
#include <vector>

#include "epochfs/cache/epoch_policy.h"
#include "epochfs/cache/future_policy.h"
#include "epochfs/cache/policy.h"

namespace {

using epochfs::cache::Access;
using epochfs::cache::Decision;
using epochfs::cache::JobId;
using epochfs::cache::JobSpec;
using epochfs::cache::ObjectId;
using epochfs::cache::Policy;
using epochfs::cache::SampleRef;
using Clock = std::chrono::steady_clock;

struct Job {
  JobSpec spec;
  std::vector<SampleRef> samples;
  std::vector<std::vector<uint32_t>> orders;  // per epoch
  uint64_t step_ns = 0;
};

struct Event {
  JobId job;
  uint32_t epoch;
  uint32_t sample;
  uint64_t now;
  bool begins_epoch;
};

struct Workload {
  std::vector<Job> jobs;
  std::vector<Event> events;
  uint64_t budget = 0;
};

Workload Make(uint64_t per_job) {
  std::mt19937_64 rng(42);
  Workload w;
  const uint32_t sizes[3] = {20000, 12500, 25000};
  const uint32_t batches[3] = {32, 64, 16};
  const uint64_t steps[3] = {100, 150, 250};
  uint64_t total = 0;
  for (uint32_t i = 0; i < 3; ++i) {
    Job j;
    const uint32_t n = sizes[i];
    const uint32_t epochs = static_cast<uint32_t>((per_job + n - 1) / n);
    j.spec = JobSpec{i + 1, "bench", batches[i], epochs, 4, 0};
    for (uint32_t x = 0; x < n; ++x) {
      j.samples.push_back({(uint64_t{i} + 1) << 32 | x, 64 * 1024 + rng() % (96 * 1024)});
      total += j.samples.back().size;
    }
    for (uint32_t k = 0; k < epochs; ++k) {
      std::vector<uint32_t> o(n);
      for (uint32_t x = 0; x < n; ++x) o[x] = x;
      std::shuffle(o.begin(), o.end(), rng);
      j.orders.push_back(std::move(o));
    }
    j.step_ns = steps[i];
    w.jobs.push_back(std::move(j));
  }
  w.budget = total * 3 / 10;
  // Interleave by simulated time.
  std::vector<uint64_t> t(3, 0), done(3, 0);
  for (;;) {
    int best = -1;
    for (int i = 0; i < 3; ++i) {
      if (done[i] < per_job && (best < 0 || t[i] < t[best])) best = i;
    }
    if (best < 0) break;
    const Job& j = w.jobs[best];
    const uint64_t n = j.samples.size();
    const uint32_t k = static_cast<uint32_t>(done[best] / n);
    const uint32_t pos = static_cast<uint32_t>(done[best] % n);
    w.events.push_back({j.spec.id, k, j.orders[k][pos], t[best], pos == 0});
    ++done[best];
    t[best] += j.step_ns + rng() % j.step_ns;
  }
  return w;
}

struct Result {
  double loop_ns = 0;
  double call_ns = 0;
  double hit_ratio = 0;
};

Result Replay(const Workload& w, std::unique_ptr<Policy> p) {
  for (const Job& j : w.jobs) {
    if (!p->AddJob(j.spec).ok() || !p->SetSamples(j.spec.id, j.samples).ok() ||
        !p->SetOrder(j.spec.id, 0, j.orders[0]).ok()) {
      std::fprintf(stderr, "setup failed\n");
      std::exit(1);
    }
  }
  std::unordered_set<ObjectId> store;
  store.reserve(1 << 17);
  uint64_t hits = 0;
  uint64_t call_total = 0;
  auto apply = [&store](const Decision& d, ObjectId loaded) {
    for (ObjectId v : d.evict) store.erase(v);
    if (d.admit) store.insert(loaded);
  };
  const Clock::time_point start = Clock::now();
  for (const Event& e : w.events) {
    const Job& j = w.jobs[e.job - 1];
    if (e.begins_epoch) {
      if (e.epoch + 1 < j.orders.size()) {
        (void)p->SetOrder(e.job, e.epoch + 1, j.orders[e.epoch + 1]);
      }
      auto r = p->BeginEpoch(e.job, e.epoch, e.now);
      if (r.ok()) apply(r.value(), 0);
    }
    const SampleRef& s = j.samples[e.sample];
    const Access a{s.object, s.size, e.job, static_cast<int64_t>(e.sample), e.now};
    const bool hit = store.count(s.object) != 0;
    const Clock::time_point c0 = Clock::now();
    Decision d = hit ? p->OnHit(a) : p->OnMiss(a, 2000);
    call_total += static_cast<uint64_t>((Clock::now() - c0).count());
    hits += hit ? 1 : 0;
    apply(d, hit ? 0 : s.object);
  }
  const double elapsed = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  for (const Job& j : w.jobs) (void)p->EndJob(j.spec.id);

  // The timer's own cost, to subtract from the per-call figure.
  uint64_t overhead = 0;
  for (size_t i = 0; i < w.events.size(); ++i) {
    const Clock::time_point c0 = Clock::now();
    overhead += static_cast<uint64_t>((Clock::now() - c0).count());
  }
  Result r;
  const double n = static_cast<double>(w.events.size());
  r.loop_ns = elapsed / n;
  r.call_ns = static_cast<double>(call_total > overhead ? call_total - overhead : 0) / n;
  r.hit_ratio = static_cast<double>(hits) / n;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t per_job = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const Workload w = Make(per_job);
  std::printf("policy_bench: 3 jobs x %llu accesses, budget %.1f MiB (30%% of the data)\n",
              static_cast<unsigned long long>(per_job), static_cast<double>(w.budget) / 1048576);
#ifndef NDEBUG
  std::printf("note: assertions on (debug accounting check after every event)\n");
#endif
  epochfs::cache::EpochPolicyParams params;
  params.budget_bytes = w.budget;
  // Warm-up once to fault in pages and fill allocator caches, then measure.
  (void)Replay(w, epochfs::cache::MakeEpochPolicy(params));
  const Result e = Replay(w, epochfs::cache::MakeEpochPolicy(params));
  const Result l = Replay(w, epochfs::cache::MakeLruPolicy(w.budget));
  epochfs::cache::FuturePolicyParams fp;
  fp.budget_bytes = w.budget;
  const Result f = Replay(w, epochfs::cache::MakeFuturePolicy(fp));
  std::printf("%-6s %10s %10s %10s\n", "policy", "loop ns", "call ns", "hit ratio");
  std::printf("%-6s %10.1f %10.1f %10.3f\n", "epoch", e.loop_ns, e.call_ns, e.hit_ratio);
  std::printf("%-6s %10.1f %10.1f %10.3f\n", "lru", l.loop_ns, l.call_ns, l.hit_ratio);
  std::printf("%-6s %10.1f %10.1f %10.3f\n", "future", f.loop_ns, f.call_ns, f.hit_ratio);
  return 0;
}
