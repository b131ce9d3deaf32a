// Randomised multi-job schedules through the epoch policy, checked after every
// event against a shadow store and against what the policy reports.
//
// Jobs differ in dataset size, sample sizes, batch size, loaders, speed, number
// of epochs (some unknown), shard fraction and start time; some share a
// dataset. Reads come out of order within a window that spans epoch changes
// (so late reads reach the tail), the epoch begins when its first read comes
// (inference), next orders are declared at random points or not at all, and
// objects are dropped behind the policy's back; bad orders are refused without
// change; some jobs end early.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "epochfs/cache/epoch_policy.h"
#include "policy_harness.h"

namespace epochfs::cache {
namespace {

using testing::Harness;

struct Read {
  uint32_t epoch;
  uint32_t sample;
};

struct SimJob {
  JobSpec spec;
  uint32_t n = 0;
  std::vector<SampleRef> samples;
  uint32_t run_epochs = 0;   // epochs actually run (== spec.epochs when known)
  double shard = 1.0;        // fraction of the samples in each epoch's order
  uint64_t step_ns = 0;      // time between two reads
  uint64_t load_ns = 0;      // miss cost
  uint64_t next_time = 0;
  uint32_t window = 1;       // out-of-order read window
  std::map<uint32_t, std::vector<uint32_t>> orders;  // every epoch's order (generated)
  std::set<uint32_t> declared;                       // declared to the policy
  std::deque<Read> queue;                            // upcoming reads
  uint32_t queued_epochs = 0;                        // epochs appended to queue
  uint32_t begun = 0;                                // last BeginEpoch
  bool started = false;
  bool ended = false;
  int64_t end_early_at = -1;                         // read count at which EndJob comes
  uint64_t reads = 0;
};

class RandomSchedule {
 public:
  explicit RandomSchedule(uint64_t seed) : rng_(seed) {}

  void Run() {
    MakeJobs();
    EpochPolicyParams params;
    params.budget_bytes = budget_;
    params.gain_max = Uniform(0, 3) == 0 ? 1.0 : 2.0;
    params.warmup_batches = Uniform(0, 2) == 0 ? 0 : Uniform(1, 4);
    params.seed = rng_();
    params.tail_batches = Uniform(0, 3);
    h_ = std::make_unique<Harness>(MakeEpochPolicy(params));
    for (SimJob& j : jobs_) {
      h_->AddJob(j.spec, j.samples);
      ExternalCheck();
    }
    for (;;) {
      SimJob* j = NextJob();
      if (j == nullptr) break;
      Step(*j);
      ExternalCheck();
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_EQ(h_->policy().pool_bytes(), budget_);
    EXPECT_EQ(h_->policy().resident_bytes(), 0u);
    EXPECT_TRUE(h_->resident_set().empty());
    EXPECT_TRUE(h_->policy().Jobs().empty());
    events_ = h_->checks;
    admissions_ = h_->admissions;
    digest_ = h_->digest;
  }

  uint64_t events() const { return events_; }
  uint64_t digest() const { return digest_; }
  uint64_t hits() const { return hits_; }
  uint64_t reads() const { return reads_; }
  uint64_t admissions() const { return admissions_; }
  uint64_t taken() const { return taken_; }
  uint64_t tail_seen() const { return tail_seen_; }
  uint64_t last_seen() const { return last_seen_; }

 private:
  uint64_t Uniform(uint64_t lo, uint64_t hi) {  // inclusive
    return lo + rng_() % (hi - lo + 1);
  }
  bool Chance(double p) { return static_cast<double>(rng_() % 1000000) < p * 1e6; }

  void MakeJobs() {
    const uint32_t count = static_cast<uint32_t>(Uniform(2, 4));
    uint64_t total = 0;
    for (uint32_t i = 0; i < count; ++i) {
      SimJob j;
      const JobId id = i + 1;
      const bool share = i > 0 && Chance(0.3);
      if (share) {
        const SimJob& other = jobs_[Uniform(0, i - 1)];
        j.n = other.n;
        j.samples = other.samples;
      } else {
        j.n = static_cast<uint32_t>(Uniform(20, 300));
        for (uint32_t x = 0; x < j.n; ++x) {
          j.samples.push_back({id * 100000 + x, Uniform(1, 1000)});
          total += j.samples.back().size;
        }
      }
      const uint32_t b = static_cast<uint32_t>(Uniform(1, 12));
      const bool known = !Chance(0.25);
      j.run_epochs = static_cast<uint32_t>(Uniform(2, 8));
      const uint32_t loaders = static_cast<uint32_t>(Uniform(1, 4));
      const uint64_t compute = Chance(0.5) ? 0 : Uniform(0, 4000);
      j.spec = JobSpec{id, "job" + std::to_string(id), b, known ? j.run_epochs : 0, loaders,
                       compute};
      j.shard = Chance(0.3) ? 0.5 : 1.0;
      j.step_ns = Uniform(50, 400);
      j.load_ns = Uniform(200, 3000);
      j.next_time = Uniform(0, 20000);
      j.window = static_cast<uint32_t>(Uniform(1, 2 * loaders));
      if (Chance(0.15)) j.end_early_at = static_cast<int64_t>(Uniform(1, j.n * j.run_epochs));
      for (uint32_t k = 0; k < j.run_epochs; ++k) j.orders[k] = MakeOrder(j.n, j.shard);
      jobs_.push_back(std::move(j));
    }
    budget_ = std::max<uint64_t>(1000, total * Uniform(5, 80) / 100);
  }

  std::vector<uint32_t> MakeOrder(uint32_t n, double shard) {
    std::vector<uint32_t> v(n);
    for (uint32_t i = 0; i < n; ++i) v[i] = i;
    std::shuffle(v.begin(), v.end(), rng_);
    v.resize(std::max<uint32_t>(1, static_cast<uint32_t>(n * shard)));
    return v;
  }

  SimJob* NextJob() {
    SimJob* best = nullptr;
    for (SimJob& j : jobs_) {
      if (!j.ended && (best == nullptr || j.next_time < best->next_time)) best = &j;
    }
    return best;
  }

  void Declare(SimJob& j, uint32_t k) {
    if (k >= j.run_epochs || j.declared.count(k) != 0) return;
    Status st = h_->policy().SetOrder(j.spec.id, k, j.orders[k]);
    ASSERT_TRUE(st.ok()) << st.ToString();
    j.declared.insert(k);
    h_->Check();
  }

  void Enqueue(SimJob& j) {
    while (j.queue.size() < 2 * j.window + 1 && j.queued_epochs < j.run_epochs) {
      const uint32_t k = j.queued_epochs++;
      // Most jobs declare K before its reads come; some never do.
      if (!Chance(0.1)) Declare(j, k);
      for (uint32_t x : j.orders[k]) j.queue.push_back({k, x});
    }
  }

  void Step(SimJob& j) {
    const uint64_t now = j.next_time;
    j.next_time += j.step_ns / 2 + Uniform(0, j.step_ns);
    const JobId id = j.spec.id;
    if (j.end_early_at >= 0 && static_cast<int64_t>(j.reads) >= j.end_early_at) {
      h_->EndJob(id);
      j.ended = true;
      return;
    }
    Enqueue(j);
    if (j.queue.empty()) {
      h_->EndJob(id);
      j.ended = true;
      return;
    }
    // Occasional side events.
    if (Chance(0.01) && !h_->resident_set().empty()) {
      auto it = h_->resident_set().begin();
      std::advance(it, Uniform(0, h_->resident_set().size() - 1));
      h_->Drop(*it);
    }
    if (Chance(0.01)) BadOrder(j);
    if (Chance(0.05)) Declare(j, j.begun + 1);  // ahead of time

    const size_t i = Uniform(0, std::min<size_t>(j.window, j.queue.size()) - 1);
    const Read r = j.queue[i];
    j.queue.erase(j.queue.begin() + static_cast<std::ptrdiff_t>(i));
    if (!j.started || r.epoch > j.begun) {
      // The epoch begins with its first read (what control/ infers).
      j.started = true;
      j.begun = r.epoch;
      h_->BeginEpoch(id, r.epoch, now);
    }
    ++j.reads;
    ++reads_;
    const JobState before = Snap(id).state;
    hits_ += h_->Read(id, r.sample, now, j.load_ns) ? 1 : 0;
    for (ObjectId v : h_->last.evict) {  // S37 evicts from another job's next
      bool own = false;
      for (const SampleRef& sr : j.samples) own = own || sr.object == v;
      taken_ += own ? 0 : 1;
    }
    if (h_->last.admit) {
      EXPECT_EQ(before, JobState::kCaching) << "admitted outside the caching state";
      EXPECT_EQ(h_->policy().Where(id, r.sample), Region::kNext);
    }
    if (Chance(0.02)) {  // a retry of the same read
      h_->Read(id, r.sample, now + 1, j.load_ns);
    }
  }

  // A bad order must be refused and change nothing.
  void BadOrder(SimJob& j) {
    const std::vector<JobSnapshot> before = h_->policy().Jobs();
    const std::vector<uint32_t> counters = h_->policy().NextCounters(j.spec.id);
    std::vector<uint32_t> bad = j.orders[std::min(j.begun + 1, j.run_epochs - 1)];
    if (Chance(0.5) || bad.size() < 2) {
      bad.push_back(j.n + static_cast<uint32_t>(Uniform(0, 5)));
    } else {
      bad.back() = bad.front();
    }
    const uint32_t k = j.started ? j.begun + 1 : 0;
    EXPECT_EQ(h_->policy().SetOrder(j.spec.id, k, bad).code(), Code::kInvalidArgument);
    EXPECT_EQ(h_->policy().NextCounters(j.spec.id), counters);
    const std::vector<JobSnapshot> after = h_->policy().Jobs();
    ASSERT_EQ(before.size(), after.size());
    for (size_t i = 0; i < before.size(); ++i) {
      EXPECT_EQ(before[i].next_bytes, after[i].next_bytes);
      EXPECT_EQ(before[i].granted_unused_bytes, after[i].granted_unused_bytes);
    }
  }

  JobSnapshot Snap(JobId id) {
    for (const JobSnapshot& s : h_->policy().Jobs()) {
      if (s.id == id) return s;
    }
    return {};
  }

  // What the policy reports must agree with the shadow store and the orders.
  void ExternalCheck() {
    Policy& p = h_->policy();
    uint64_t sum = p.pool_bytes();
    std::set<ObjectId> held;
    for (const JobSnapshot& s : p.Jobs()) {
      sum += s.cur_bytes + s.next_bytes + s.tail_bytes + s.granted_unused_bytes;
      tail_seen_ += s.tail_bytes > 0 ? 1 : 0;
      last_seen_ += s.state == JobState::kLastEpoch && s.cur_bytes > 0 ? 1 : 0;
      const SimJob& j = jobs_[s.id - 1];
      const bool has_next = s.started && j.declared.count(s.epoch + 1) != 0;
      std::vector<uint32_t> pos(j.n, UINT32_MAX);
      if (has_next) {
        const std::vector<uint32_t>& o = j.orders.at(s.epoch + 1);
        for (uint32_t i = 0; i < o.size(); ++i) pos[o[i]] = i;
      }
      std::vector<uint32_t> cur_pos(j.n, UINT32_MAX);
      const bool has_cur = s.started && j.declared.count(s.epoch) != 0;
      if (has_cur) {
        const std::vector<uint32_t>& o = j.orders.at(s.epoch);
        for (uint32_t i = 0; i < o.size(); ++i) cur_pos[o[i]] = i;
      }
      std::map<uint32_t, uint32_t> per_batch;
      for (uint32_t x = 0; x < j.n; ++x) {
        const Region r = p.Where(s.id, x);
        if (r == Region::kNone) continue;
        held.insert(j.samples[x].object);
        EXPECT_TRUE(h_->resident(j.samples[x].object)) << "held but not in the store";
        EXPECT_NE(s.state, JobState::kWarmup) << "caches during warm-up";
        EXPECT_NE(s.state, JobState::kDone);
        if (r == Region::kNext) {
          EXPECT_EQ(s.state, JobState::kCaching) << "next filled outside caching";
          ASSERT_TRUE(has_next) << "job " << s.id << " fills next without a next order";
          ASSERT_NE(pos[x], UINT32_MAX) << "sample " << x << " not in the next order";
          ++per_batch[pos[x] / j.spec.batch_size];
        } else if (r == Region::kCur && has_cur) {
          EXPECT_NE(cur_pos[x], UINT32_MAX) << "sample " << x << " in cur not in this order";
        }
      }
      for (const auto& [batch, c] : per_batch) {
        EXPECT_LE(c, s.e) << "job " << s.id << " batch " << batch;
      }
      if (s.state == JobState::kLastEpoch || s.state == JobState::kDone) {
        EXPECT_EQ(s.next_bytes, 0u);
        EXPECT_EQ(s.granted_unused_bytes, 0u);
      }
    }
    EXPECT_EQ(sum, budget_) << "budget not conserved";
    EXPECT_EQ(held, h_->resident_set()) << "store and policy disagree";
  }

  std::mt19937_64 rng_;
  std::vector<SimJob> jobs_;
  uint64_t budget_ = 0;
  std::unique_ptr<Harness> h_;
  uint64_t events_ = 0;
  uint64_t digest_ = 0;
  uint64_t hits_ = 0;
  uint64_t reads_ = 0;
  uint64_t admissions_ = 0;
  uint64_t taken_ = 0;      // evictions of another job's sample on a read (S37)
  uint64_t tail_seen_ = 0;  // checks that saw a job with a tail
  uint64_t last_seen_ = 0;  // checks that saw a last-epoch job draining cur
};

class EpochPolicyRandom : public ::testing::TestWithParam<uint64_t> {};

TEST_P(EpochPolicyRandom, InvariantsHoldOnEveryEvent) {
  RandomSchedule s(GetParam());
  s.Run();
  RecordProperty("events", std::to_string(s.events()));
  EXPECT_GT(s.reads(), 20u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, EpochPolicyRandom,
                         ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                           16, 17, 18, 19, 20, 21, 22, 23, 24));

TEST(EpochPolicyRandomGolden, Print) {
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    RandomSchedule s(seed);
    s.Run();
    std::printf("0x%016llxULL,\n", static_cast<unsigned long long>(s.digest()));
  }
}

// Many seeds together must produce hits (the policy does cache).
TEST(EpochPolicyRandomAggregate, SchedulesProduceHits) {
  uint64_t hits = 0, reads = 0, events = 0, admissions = 0, taken = 0, tail = 0, last = 0;
  for (uint64_t seed = 100; seed < 110; ++seed) {
    RandomSchedule s(seed);
    s.Run();
    admissions += s.admissions();
    taken += s.taken();
    tail += s.tail_seen();
    last += s.last_seen();
    hits += s.hits();
    reads += s.reads();
    events += s.events();
  }
  // The schedules reach every path worth checking.
  EXPECT_GT(admissions, 0u);
  EXPECT_GT(hits, 0u);
  EXPECT_GT(taken, 0u);
  EXPECT_GT(tail, 0u);
  EXPECT_GT(last, 0u);
  EXPECT_GT(events, 10000u);
  std::printf("random schedules: %llu events, %llu reads, %llu hits, %llu admissions, "
              "%llu taken (S37), %llu tail checks, %llu last-epoch checks\n",
              static_cast<unsigned long long>(events), static_cast<unsigned long long>(reads),
              static_cast<unsigned long long>(hits), static_cast<unsigned long long>(admissions),
              static_cast<unsigned long long>(taken), static_cast<unsigned long long>(tail),
              static_cast<unsigned long long>(last));
}

}  // namespace
}  // namespace epochfs::cache
