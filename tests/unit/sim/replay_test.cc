// `epochfs sim --replay`: a run recorded through trace::RecordingPolicy, with a
// store that admits what fits (as the daemon's), replays to the same hits,
// misses, admissions and evictions under the policy that ran it; Belady's
// replay over the same accesses (equal sizes) hits at least as often as any.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <unordered_map>

#include "epochfs/cache/epoch_policy.h"
#include "epochfs/cache/future_policy.h"
#include "epochfs/sim/replay.h"
#include "epochfs/trace/recording_policy.h"

namespace epochfs::sim {
namespace {

using cache::ObjectId;

std::unique_ptr<cache::Policy> Make(PolicyKind k, uint64_t budget, bool weigh_hits = false) {
  if (k == PolicyKind::kLru) return cache::MakeLruPolicy(budget);
  if (k == PolicyKind::kFuture) {
    cache::FuturePolicyParams p;
    p.budget_bytes = budget;
    p.weigh_hits = weigh_hits;
    return cache::MakeFuturePolicy(p);
  }
  cache::EpochPolicyParams p;
  p.budget_bytes = budget;
  return cache::MakeEpochPolicy(p);
}

struct Live {
  std::string text;  // the trace
  ReplayResult r;    // what the live run saw
};

// Three jobs (two share a dataset) read their declared orders interleaved,
// with unclaimed reads, invalidations and budget changes in between.
// weigh_hits: the future policy weighs hits; the readers' waits are drawn
// (job 1's loaders wait long, job 3's little).
Live Record(PolicyKind kind, uint64_t seed, bool equal_sizes, bool weigh_hits = false) {
  std::mt19937_64 rng(seed);
  uint64_t budget = 20'000;
  Live live;
  auto p = trace::MakeRecordingPolicy(Make(kind, budget, weigh_hits),
                                      [&](const std::string& l) { live.text += l + "\n"; },
                                      {0, weigh_hits});
  std::unordered_map<ObjectId, uint64_t> resident;
  uint64_t used = 0;
  auto apply = [&](const cache::Decision& d, ObjectId loaded, uint64_t size) {
    for (ObjectId v : d.evict) {
      auto it = resident.find(v);
      if (it == resident.end()) continue;
      used -= it->second;
      resident.erase(it);
      ++live.r.evictions;
    }
    if (d.admit && loaded != 0 && resident.count(loaded) == 0) {
      if (used + size <= budget) {
        resident.emplace(loaded, size);
        used += size;
        ++live.r.admissions;
      } else {
        ++live.r.refused;
        p->OnDropped(loaded);
      }
    }
  };
  auto size_of = [&](ObjectId o) { return equal_sizes ? 500 : 100 + (o * 7919) % 1500; };
  struct J {
    cache::JobId id = 0;
    uint32_t epochs = 0, epoch = 0, pos = 0;
    std::vector<cache::SampleRef> samples;
    std::vector<std::vector<uint32_t>> orders;
    bool live = true;
  };
  std::vector<J> jobs;
  uint64_t t = 1;
  for (cache::JobId id = 1; id <= 3; ++id) {
    J j;
    j.id = id;
    j.epochs = 3;
    const ObjectId base = id == 3 ? 2000 : 1000;  // jobs 1 and 2 share a dataset
    const uint32_t n = id == 3 ? 40 : 60;
    for (uint32_t i = 0; i < n; ++i) j.samples.push_back({base + i, size_of(base + i)});
    for (uint32_t e = 0; e < j.epochs; ++e) {
      std::vector<uint32_t> o(n);
      for (uint32_t i = 0; i < n; ++i) o[i] = i;
      std::shuffle(o.begin(), o.end(), rng);
      j.orders.push_back(o);
    }
    EXPECT_TRUE(p->AddJob({id, "j" + std::to_string(id), 4, j.epochs, 2, 0}).ok());
    EXPECT_TRUE(p->SetSamples(id, j.samples).ok());
    EXPECT_TRUE(p->SetOrder(id, 0, j.orders[0]).ok());
    EXPECT_TRUE(p->SetOrder(id, 1, j.orders[1]).ok());
    auto d = p->BeginEpoch(id, 0, t);
    if (d.ok()) apply(d.value(), 0, 0);
    jobs.push_back(j);
  }
  auto access = [&](cache::Access a) {
    if (weigh_hits && a.job != cache::kNoJob) a.wait_ns = rng() % (a.job == 1 ? 4000 : 400);
    ++live.r.accesses;
    if (resident.count(a.object) != 0) {
      ++live.r.hits;
      apply(p->OnHit(a), 0, 0);
    } else {
      ++live.r.misses;
      live.r.bytes_read += a.size;
      apply(p->OnMiss(a, 1000 + rng() % 5000), a.object, a.size);
    }
  };
  for (int step = 0; step < 3000; ++step) {
    t += 1 + rng() % 2000;
    const uint64_t r = rng() % 100;
    if (r < 3) {
      const ObjectId o = 3000 + rng() % 30;  // nobody's
      access({o, size_of(o), cache::kNoJob, -1, t});
    } else if (r < 4 && !resident.empty()) {  // the lower file changed: invalidated
      auto it = resident.begin();
      std::advance(it, static_cast<long>(rng() % resident.size()));
      const ObjectId o = it->first;
      used -= it->second;
      resident.erase(it);
      p->OnDropped(o);
    } else if (r < 5 && weigh_hits) {  // a measured request cost (cache.request_bytes=auto)
      p->SetRequestBytes(rng() % 4000);
    } else if (r < 5 && kind != PolicyKind::kEpoch) {
      const uint64_t b = 10'000 + rng() % 30'000;
      auto d = p->SetBudget(b);
      if (d.ok()) {
        budget = std::max(budget, b);
        apply(d.value(), 0, 0);
        budget = b;
      }
    } else {
      std::vector<J*> live_jobs;
      for (J& j : jobs) {
        if (j.live) live_jobs.push_back(&j);
      }
      if (live_jobs.empty()) break;
      J& j = *live_jobs[rng() % live_jobs.size()];
      const uint32_t s = j.orders[j.epoch][j.pos];
      access({j.samples[s].object, j.samples[s].size, j.id, s, t});
      if (++j.pos == j.orders[j.epoch].size()) {
        j.pos = 0;
        if (++j.epoch == j.epochs) {
          j.live = false;
          auto d = p->EndJob(j.id);
          if (d.ok()) apply(d.value(), 0, 0);
        } else {
          auto d = p->BeginEpoch(j.id, j.epoch, t);
          if (d.ok()) apply(d.value(), 0, 0);
          if (j.epoch + 1 < j.epochs) {
            EXPECT_TRUE(p->SetOrder(j.id, j.epoch + 1, j.orders[j.epoch + 1]).ok());
          }
        }
      }
    }
  }
  return live;
}

TEST(Replay, TheLivePolicyReplaysToTheSameDecisions) {
  for (PolicyKind k : {PolicyKind::kFuture, PolicyKind::kEpoch, PolicyKind::kLru}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(std::string(PolicyKindName(k)) + " seed " + std::to_string(seed));
      const Live live = Record(k, seed, false);
      auto events = trace::ParseTrace(live.text);
      ASSERT_TRUE(events.ok()) << events.status().message();
      const TraceSummary s = Summarize(events.value());
      EXPECT_EQ(s.policy, k == PolicyKind::kEpoch ? "epoch" : PolicyKindName(k));
      EXPECT_EQ(s.jobs, 3u);
      EXPECT_EQ(s.accesses, live.r.accesses);
      EXPECT_EQ(s.hits, live.r.hits);
      auto r = Replay(events.value(), k, 97);
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_GT(live.r.hits, 20u) << "the run never hit: the test tests nothing";
      EXPECT_EQ(r.value().accesses, live.r.accesses);
      EXPECT_EQ(r.value().hits, live.r.hits);
      EXPECT_EQ(r.value().misses, live.r.misses);
      EXPECT_EQ(r.value().bytes_read, live.r.bytes_read);
      EXPECT_EQ(r.value().admissions, live.r.admissions);
      EXPECT_EQ(r.value().evictions, live.r.evictions);
      EXPECT_EQ(r.value().refused, live.r.refused);
      EXPECT_EQ(r.value().rejected_calls, 0u);
    }
  }
}

// The trace keeps what weighing hits needs (the flag, every read's wait)
// and each measured request cost: replayed, the same decisions; replayed
// without weighing, others.
TEST(Replay, WeighingHitsReplaysToTheSameDecisions) {
  for (uint64_t seed : {1u, 2u}) {
    SCOPED_TRACE(seed);
    const Live live = Record(PolicyKind::kFuture, seed, false, true);
    auto events = trace::ParseTrace(live.text);
    ASSERT_TRUE(events.ok()) << events.status().message();
    ASSERT_TRUE(events.value().front().weigh_hits);
    EXPECT_TRUE(std::any_of(events.value().begin(), events.value().end(), [](const auto& e) {
      return e.kind == trace::TraceKind::kRequestBytes && e.request_bytes != 0;
    }));
    auto r = Replay(events.value(), PolicyKind::kFuture, 97);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r.value().hits, live.r.hits);
    EXPECT_EQ(r.value().admissions, live.r.admissions);
    EXPECT_EQ(r.value().evictions, live.r.evictions);
    EXPECT_EQ(r.value().refused, live.r.refused);
    std::vector<trace::TraceEvent> unweighed = events.value();
    unweighed.front().weigh_hits = false;
    auto u = Replay(unweighed, PolicyKind::kFuture, 97);
    ASSERT_TRUE(u.ok()) << u.status().message();
    EXPECT_NE(std::make_pair(u.value().hits, u.value().evictions),
              std::make_pair(live.r.hits, live.r.evictions))
        << "weighing changed nothing: the test tests nothing";
  }
}

TEST(Replay, BeladyHitsAtLeastAsOftenOnEqualSizes) {
  for (uint64_t seed : {4u, 5u}) {
    SCOPED_TRACE(seed);
    const Live live = Record(PolicyKind::kFuture, seed, true);
    auto events = trace::ParseTrace(live.text);
    ASSERT_TRUE(events.ok()) << events.status().message();
    auto belady = Replay(events.value(), PolicyKind::kBelady, 97);
    ASSERT_TRUE(belady.ok()) << belady.status().message();
    for (PolicyKind k : AllPolicyKinds()) {
      auto r = Replay(events.value(), k, 97);
      ASSERT_TRUE(r.ok()) << PolicyKindName(k) << ": " << r.status().message();
      EXPECT_EQ(r.value().accesses, live.r.accesses);
      EXPECT_GE(belady.value().hits, r.value().hits) << PolicyKindName(k);
    }
    auto none = Replay(events.value(), PolicyKind::kNone);
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none.value().hits, 0u);
  }
}

}  // namespace
}  // namespace epochfs::sim

namespace epochfs::sim {
namespace replay_bytes_test {

// The replay's rows count every byte a policy reads from LOWER: a policy
// that prefetches is charged every load ahead the trace shows (admitted or
// not), one that does not is charged none; the live row counts misses,
// prefetches and refills.
TEST(ReplayBytes, RowsCountEveryByteReadFromLowerPrefetchIncluded) {
  const std::string text =
      "{\"ev\":\"start\",\"policy\":\"future\",\"budget\":1000,\"format\":4,"
      "\"request_bytes\":0,\"weigh_hits\":false}\n"
      "{\"ev\":\"prefetch\",\"o\":1,\"size\":100,\"job\":0,\"sample\":-1,\"t\":1,\"load_ns\":5}\n"
      "{\"ev\":\"hit\",\"o\":1,\"size\":100,\"job\":0,\"sample\":-1,\"t\":2,"
      "\"served\":\"joined\"}\n"
      "{\"ev\":\"miss\",\"o\":2,\"size\":50,\"job\":0,\"sample\":-1,\"t\":3,\"load_ns\":5}\n"
      "{\"ev\":\"hit\",\"o\":2,\"size\":50,\"job\":0,\"sample\":-1,\"t\":4,"
      "\"served\":\"refill\"}\n";
  auto events = trace::ParseTrace(text);
  ASSERT_TRUE(events.ok()) << events.status().message();
  const TraceSummary live = Summarize(events.value());
  EXPECT_EQ(live.bytes_read, 100u + 50u + 50u);
  EXPECT_EQ(live.bytes_missed, 50u);
  EXPECT_EQ(live.joined, 1u);
  EXPECT_EQ(live.refills, 1u);
  auto future = Replay(events.value(), PolicyKind::kFuture, 1);
  ASSERT_TRUE(future.ok()) << future.status().message();
  EXPECT_EQ(future.value().prefetch_bytes, 100u);
  EXPECT_EQ(future.value().bytes_read, future.value().prefetch_bytes + 50u * future.value().misses);
  auto lru = Replay(events.value(), PolicyKind::kLru, 1);
  ASSERT_TRUE(lru.ok());
  EXPECT_EQ(lru.value().prefetch_bytes, 0u);
  EXPECT_EQ(lru.value().bytes_read, 100u + 50u) << "no prefetch: both objects missed";
  auto belady = Replay(events.value(), PolicyKind::kBelady, 1);
  ASSERT_TRUE(belady.ok());
  EXPECT_NE(FormatReplayTable("t", live, {belady.value()}).find("a bound on misses"),
            std::string::npos);
}

// A "refilled" event (format 5): the live hit before it was a refill. The
// live row counts it a refill and its bytes read from LOWER; it is no access
// of its own (the replay's accesses and hits are those of the hits and
// misses), and every policy replays it without a rejected call.
TEST(ReplayBytes, ARefilledHitIsALiveRefillAndNoAccess) {
  const std::string text =
      "{\"ev\":\"start\",\"policy\":\"future\",\"budget\":1000,\"format\":5,"
      "\"request_bytes\":0,\"weigh_hits\":false}\n"
      "{\"ev\":\"miss\",\"o\":2,\"size\":50,\"job\":0,\"sample\":-1,\"t\":3,\"load_ns\":5}\n"
      "{\"ev\":\"hit\",\"o\":2,\"size\":50,\"job\":0,\"sample\":-1,\"t\":4}\n"
      "{\"ev\":\"refilled\",\"o\":2,\"size\":50,\"job\":0,\"sample\":-1,\"t\":5,"
      "\"wait_ns\":9}\n";
  auto events = trace::ParseTrace(text);
  ASSERT_TRUE(events.ok()) << events.status().message();
  const TraceSummary live = Summarize(events.value());
  EXPECT_EQ(live.accesses, 2u);
  EXPECT_EQ(live.hits, 1u);
  EXPECT_EQ(live.refills, 1u);
  EXPECT_EQ(live.bytes_read, 50u + 50u);
  for (PolicyKind k : AllPolicyKinds()) {
    auto r = Replay(events.value(), k, 1);
    ASSERT_TRUE(r.ok()) << PolicyKindName(k) << ": " << r.status().message();
    EXPECT_EQ(r.value().accesses, 2u) << PolicyKindName(k);
    EXPECT_EQ(r.value().rejected_calls, 0u) << PolicyKindName(k);
  }
}

}  // namespace replay_bytes_test
}  // namespace epochfs::sim
