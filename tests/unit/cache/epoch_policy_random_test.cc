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
//
// Two modes:
//   kPlain:  share_idle = false, jobs only. Every Decision and every account is
//            fingerprinted; the fingerprints of seeds 1..24 were recorded with
//            the policy as it was before the shared region existed (so
//            share_idle = false is exactly the old policy).
//   kShared: the same schedule runs in lockstep through two policies, A
//            (share_idle = false) and B (share_idle = true), with unattributed
//            reads interleaved (no job, an unknown job, a file outside a job's
//            sample list; before the jobs start, between their reads, after they
//            end). Both are checked after every event against their shadow
//            stores, the budget equation (pool + shared + jobs) and the orders;
//            and every job's measurements and standing in B (state, epoch,
//            T, t_s, compute, e, need, rank, λ) must equal those in A. The
//            regions themselves legitimately differ: B adopts shared objects a
//            job is about to read (at the end of its warm-up into `next`, at an
//            epoch's start into `cur`, docs/policy.md), so from then on B's job
//            holds objects A's job must load, and their later grants, hits and
//            S37 victims follow different contents. So do two things that
//            depend on contents: a later job's reservation (capped by the
//            pool, which B's jobs fill differently) and the batch count (a late
//            read that hits the tail does not count for the new epoch; one that
//            misses does). Over many seeds, B's jobs hit at least as often as
//            A's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
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

// An object that no job's sample list names (a script, a config, a
// validation file read by a training job).
struct ShellObject {
  ObjectId id;
  uint64_t size;
  uint64_t load_ns;
};

enum class Mode { kPlain, kShared };

// Budget changes (the memory governor): with kResize, SetBudget to a random
// budget in [0, 2 × the initial one] comes between events (its own random
// stream, so the job schedule is the one of kFixed), and every check above
// uses the budget in force.
enum class Budget { kFixed, kResize };

class RandomSchedule {
 public:
  explicit RandomSchedule(uint64_t seed, Mode mode = Mode::kPlain, Budget bm = Budget::kFixed)
      : rng_(seed),
        urng_(seed * 0x9e3779b97f4a7c15ULL + 77),
        brng_(seed * 0xbf58476d1ce4e5b9ULL + 5),
        mode_(mode),
        resize_(bm == Budget::kResize) {}

  void Run() {
    MakeJobs();
    EpochPolicyParams params;
    params.budget_bytes = budget_;
    params.gain_max = Uniform(0, 3) == 0 ? 1.0 : 2.0;
    params.warmup_batches = Uniform(0, 2) == 0 ? 0 : Uniform(1, 4);
    params.seed = rng_();
    params.tail_batches = Uniform(0, 3);
    params.share_idle = false;
    h_ = std::make_unique<Harness>(MakeEpochPolicy(params));
    if (mode_ == Mode::kShared) {
      params.share_idle = true;
      b_ = std::make_unique<Harness>(MakeEpochPolicy(params));
      MakeShell();
    }
    for (SimJob& j : jobs_) {
      h_->AddJob(j.spec, j.samples);
      if (b_) b_->AddJob(j.spec, j.samples);
      ExternalCheck();
    }
    // Unattributed reads before any job reads: the whole budget is idle.
    Unattributed(UUniform(0, 400));
    for (;;) {
      SimJob* j = NextJob();
      if (j == nullptr) break;
      Step(*j);
      ExternalCheck();
      if (b_ && UChance(unattributed_rate_)) Unattributed(UUniform(1, 3));
      if (resize_ && brng_() % 1000 < 15) Resize();
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_EQ(h_->policy().pool_bytes(), budget_);
    EXPECT_EQ(h_->policy().resident_bytes(), 0u);
    EXPECT_TRUE(h_->resident_set().empty());
    EXPECT_TRUE(h_->policy().Jobs().empty());
    if (b_) {
      // Every job ended: what is resident is the shared region, and it goes on
      // serving unattributed reads.
      EXPECT_EQ(b_->policy().pool_bytes() + b_->policy().shared_bytes(), budget_);
      EXPECT_EQ(b_->policy().resident_bytes(), b_->policy().shared_bytes());
      Unattributed(UUniform(0, 200));
      EXPECT_EQ(b_->policy().resident_bytes(), b_->policy().shared_bytes());
      EXPECT_EQ(b_->policy().pool_bytes() + b_->policy().shared_bytes(), budget_);
      b_events_ = b_->checks;
      b_admissions_ = b_->admissions;
    }
    events_ = h_->checks;
    admissions_ = h_->admissions;
    digest_ = h_->digest;
  }

  uint64_t events() const { return events_; }
  uint64_t resizes() const { return resizes_; }
  uint64_t resize_evictions() const { return resize_evictions_; }
  uint64_t b_events() const { return b_events_; }
  uint64_t b_admissions() const { return b_admissions_; }
  uint64_t shared_hits() const { return shared_hits_; }
  uint64_t job_shared_hits() const { return job_shared_hits_; }
  uint64_t adoptions() const { return adoptions_; }
  uint64_t bulk_adoptions() const { return bulk_adoptions_; }
  uint64_t reclaims() const { return reclaims_; }
  uint64_t unattributed() const { return unattributed_; }
  uint64_t b_hits() const { return b_hits_; }
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
  // The unattributed reads draw from their own stream, so that the job
  // schedule is the same in both modes.
  uint64_t UUniform(uint64_t lo, uint64_t hi) { return lo + urng_() % (hi - lo + 1); }
  bool UChance(double p) { return static_cast<double>(urng_() % 1000000) < p * 1e6; }

  void MakeShell() {
    const uint64_t n = UUniform(5, 200);
    for (uint64_t k = 0; k < n; ++k) {
      shell_.push_back({900000000 + k, UUniform(1, 1000), UUniform(200, 3000)});
      h_->set_size(shell_.back().id, shell_.back().size);
      b_->set_size(shell_.back().id, shell_.back().size);
    }
    // A small hot set read often, the rest rarely (so LRU has something to keep).
    hot_ = UUniform(1, std::min<uint64_t>(n, 20));
    unattributed_rate_ = UChance(0.2) ? 0.05 : UUniform(20, 100) / 100.0;
  }

  // `count` reads nobody claims, the same to A and B: A (share_idle = false)
  // must ignore them, B may cache them in its shared region.
  void Unattributed(uint64_t count) {
    if (!b_) return;
    for (uint64_t i = 0; i < count; ++i) {
      Access a;
      uint64_t load = 0;
      const uint64_t kind = UUniform(0, 9);
      if (kind < 5) {  // a shell object, mostly from the hot set
        const ShellObject& o = shell_[UChance(0.7) ? UUniform(0, hot_ - 1)
                                                   : UUniform(0, shell_.size() - 1)];
        a = Access{o.id, o.size, kNoJob, -1, 0};
        load = o.load_ns;
        if (kind == 4) {  // read by a running job, outside its sample list
          const SimJob& j = jobs_[UUniform(0, jobs_.size() - 1)];
          if (j.started && !j.ended) a.job = j.spec.id;
        } else if (kind == 3) {
          a.job = 99;  // a job the policy does not know
        }
      } else {  // a file of some job's dataset (a shell loop over the data)
        const SimJob& j = jobs_[UUniform(0, jobs_.size() - 1)];
        const SampleRef& s = j.samples[UUniform(0, j.n - 1)];
        a = Access{s.object, s.size, kNoJob, -1, 0};
        load = j.load_ns;
      }
      a.now_ns = clock_;
      const uint64_t a_evictions = h_->evictions;
      const bool a_hit = h_->Touch(a, load);
      EXPECT_FALSE(h_->last.admit) << "share_idle = false admitted an unattributed read";
      EXPECT_EQ(h_->evictions, a_evictions);
      const bool b_hit = b_->Touch(a, load);
      ++unattributed_;
      if (b_hit && !a_hit) ++shared_hits_;
      if (b_->last.admit) {
        EXPECT_TRUE(Shared(a.object)) << "admitted outside the shared region";
      }
      ExternalCheck();
      if (UChance(0.003)) {  // the store loses a shared object
        std::vector<ObjectId> shared;
        for (ObjectId id : b_->resident_set()) {
          if (!h_->resident(id)) shared.push_back(id);
        }
        if (!shared.empty()) {
          const ObjectId v = shared[UUniform(0, shared.size() - 1)];
          h_->Drop(v);
          b_->Drop(v);
          ExternalCheck();
        }
      }
      if (::testing::Test::HasFailure()) return;
    }
  }

  // SetBudget on A (and B) to the same random budget; the Decision is applied
  // to the shadow store (Harness::Apply checks it evicts only resident
  // objects, and after it that resident bytes fit the new budget).
  void Resize() {
    if (initial_budget_ == 0) initial_budget_ = budget_;
    const uint64_t nb = brng_() % 20 == 0 ? 0 : brng_() % (2 * initial_budget_ + 1);
    for (Harness* hh : {h_.get(), b_.get()}) {
      if (hh == nullptr) continue;
      Result<Decision> r = hh->policy().SetBudget(nb);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (nb >= budget_) {
        EXPECT_TRUE(r.value().evict.empty()) << "growing evicted";
      }
      if (hh == h_.get()) resize_evictions_ += r.value().evict.size();
      hh->Apply(r.value(), 0);
      EXPECT_EQ(hh->policy().budget(), nb);
      EXPECT_LE(hh->policy().resident_bytes(), nb);
    }
    budget_ = nb;
    ++resizes_;
    ExternalCheck();
  }

  // Sets of objects built at every event are sorted vectors: a std::set's
  // allocation per insert made these checks most of the test's time under
  // ASan.
  using IdSet = std::vector<ObjectId>;
  static bool Has(const IdSet& s, ObjectId id) { return std::binary_search(s.begin(), s.end(), id); }
  static IdSet Sealed(IdSet s) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    return s;
  }

  // In B, an object resident but held by no job.
  bool Shared(ObjectId id) const {
    if (!b_->resident(id)) return false;
    for (const JobSnapshot& s : b_->policy().Jobs()) {
      const SimJob& j = jobs_[s.id - 1];
      for (uint32_t x = 0; x < j.n; ++x) {
        if (j.samples[x].object == id && b_->policy().epoch_regions()->Where(s.id, x) != Region::kNone) {
          return false;
        }
      }
    }
    return true;
  }

  // The objects B's jobs hold.
  IdSet BHeld() const {
    IdSet held;
    for (const JobSnapshot& s : b_->policy().Jobs()) {
      const SimJob& j = jobs_[s.id - 1];
      for (uint32_t x = 0; x < j.n; ++x) {
        if (b_->policy().epoch_regions()->Where(s.id, x) != Region::kNone) held.push_back(j.samples[x].object);
      }
    }
    return Sealed(std::move(held));
  }

  // B's shared objects now held by job `id` other than `except`: adopted in
  // bulk (end of warm-up, start of an epoch) by the event in between.
  uint64_t CountBulkAdoptions(const SimJob& j, const IdSet& shared_before,
                              ObjectId except) const {
    uint64_t n = 0;
    for (uint32_t x = 0; x < j.n; ++x) {
      const ObjectId obj = j.samples[x].object;
      if (obj != except && Has(shared_before, obj) &&
          b_->policy().epoch_regions()->Where(j.spec.id, x) != Region::kNone) {
        ++n;
      }
    }
    return n;
  }

  IdSet BSharedSet() const {
    IdSet shared;
    const IdSet held = BHeld();
    for (ObjectId id : b_->resident_set()) {  // in order: `shared` is sorted
      if (!Has(held, id)) shared.push_back(id);
    }
    return shared;
  }

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
      // Load time is the file's: jobs on the same files see the same (kShared
      // compares t_s measured from misses in A with hits on shared objects in B).
      if (share && mode_ == Mode::kShared) j.load_ns = jobs_[ShareOf(j)].load_ns;
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

  size_t ShareOf(const SimJob& j) const {
    for (size_t i = 0; i < jobs_.size(); ++i) {
      if (jobs_[i].samples.front().object == j.samples.front().object) return i;
    }
    return 0;
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
    if (b_) {
      st = b_->policy().SetOrder(j.spec.id, k, j.orders[k]);
      ASSERT_TRUE(st.ok()) << st.ToString();
      b_->Check();
    }
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
    clock_ = now;
    j.next_time += j.step_ns / 2 + Uniform(0, j.step_ns);
    const JobId id = j.spec.id;
    if (j.end_early_at >= 0 && static_cast<int64_t>(j.reads) >= j.end_early_at) {
      End(j);
      return;
    }
    Enqueue(j);
    if (j.queue.empty()) {
      End(j);
      return;
    }
    // Occasional side events.
    if (Chance(0.01) && !h_->resident_set().empty()) {
      auto it = h_->resident_set().begin();
      std::advance(it, Uniform(0, h_->resident_set().size() - 1));
      const ObjectId v = *it;
      h_->Drop(v);
      if (b_) b_->Drop(v);
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
      if (b_) {
        const IdSet shared = BSharedSet();
        b_->BeginEpoch(id, r.epoch, now);
        bulk_adoptions_ += CountBulkAdoptions(j, shared, std::numeric_limits<ObjectId>::max());
      }
    }
    ++j.reads;
    ++reads_;
    const JobState before = Snap(id).state;
    const ObjectId obj = j.samples[r.sample].object;
    const bool was_shared = b_ && Shared(obj);
    hits_ += h_->Read(id, r.sample, now, j.load_ns) ? 1 : 0;
    for (ObjectId v : h_->last.evict) {  // S37 evicts from another job's next
      bool own = false;
      for (const SampleRef& sr : j.samples) own = own || sr.object == v;
      taken_ += own ? 0 : 1;
    }
    if (h_->last.admit) {
      EXPECT_EQ(before, JobState::kCaching) << "admitted outside the caching state";
      EXPECT_EQ(h_->policy().epoch_regions()->Where(id, r.sample), Region::kNext);
    }
    if (b_) ReadB(j, r.sample, now, was_shared);
    if (Chance(0.02)) {  // a retry of the same read
      h_->Read(id, r.sample, now + 1, j.load_ns);
      if (b_) ReadB(j, r.sample, now + 1, b_ && Shared(obj));
    }
  }

  // The job's read in B, after the same read in A.
  void ReadB(SimJob& j, uint32_t x, uint64_t now, bool was_shared) {
    const JobId id = j.spec.id;
    const IdSet shared = BSharedSet();
    const bool hit = b_->Read(id, x, now, j.load_ns);
    bulk_adoptions_ += CountBulkAdoptions(j, shared, j.samples[x].object);
    b_hits_ += hit ? 1 : 0;
    if (hit && was_shared) {
      ++job_shared_hits_;
      if (b_->policy().epoch_regions()->Where(id, x) == Region::kNext) ++adoptions_;
    }
    for (ObjectId v : b_->last.evict) {
      // What B evicts beyond A's evictions is shared space reclaimed for a job.
      const bool also_in_a =
          std::find(h_->last.evict.begin(), h_->last.evict.end(), v) != h_->last.evict.end();
      if (!also_in_a && Has(shared, v)) ++reclaims_;
    }
    if (b_->last.admit) {
      const ObjectId obj = j.samples[x].object;
      EXPECT_TRUE(b_->policy().epoch_regions()->Where(id, x) == Region::kNext || Shared(obj));
    }
  }

  void End(SimJob& j) {
    h_->EndJob(j.spec.id);
    if (b_) b_->EndJob(j.spec.id);
    j.ended = true;
  }

  // A bad order must be refused and change nothing.
  void BadOrder(SimJob& j) {
    const std::vector<JobSnapshot> before = h_->policy().Jobs();
    const std::vector<uint32_t> counters = h_->policy().epoch_regions()->NextCounters(j.spec.id);
    std::vector<uint32_t> bad = j.orders[std::min(j.begun + 1, j.run_epochs - 1)];
    if (Chance(0.5) || bad.size() < 2) {
      bad.push_back(j.n + static_cast<uint32_t>(Uniform(0, 5)));
    } else {
      bad.back() = bad.front();
    }
    const uint32_t k = j.started ? j.begun + 1 : 0;
    EXPECT_EQ(h_->policy().SetOrder(j.spec.id, k, bad).code(), Code::kInvalidArgument);
    if (b_) {
      EXPECT_EQ(b_->policy().SetOrder(j.spec.id, k, bad).code(), Code::kInvalidArgument);
    }
    EXPECT_EQ(h_->policy().epoch_regions()->NextCounters(j.spec.id), counters);
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

  void ExternalCheck() {
    ExternalCheck(*h_);
    if (!b_) return;
    ExternalCheck(*b_);
    // Lockstep: every job's measurements and standing in B are those in A
    // (its regions differ once it adopted shared objects: see the top).
    Policy& a = h_->policy();
    Policy& b = b_->policy();
    EXPECT_EQ(a.shared_bytes(), 0u);
    const std::vector<JobSnapshot> sa = a.Jobs(), sb = b.Jobs();
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t i = 0; i < sa.size(); ++i) {
      const JobSnapshot& x = sa[i];
      const JobSnapshot& y = sb[i];
      const std::string who = "job " + std::to_string(x.id) + " differs in B: ";
      ASSERT_EQ(x.id, y.id);
      EXPECT_EQ(x.state, y.state) << who << "state";
      EXPECT_EQ(x.epoch, y.epoch) << who << "epoch";
      EXPECT_EQ(x.need_bytes, y.need_bytes) << who << "need";
      EXPECT_EQ(x.rank, y.rank) << who << "rank";
      EXPECT_EQ(x.lambda, y.lambda) << who << "lambda";
      EXPECT_EQ(x.e, y.e) << who << "e";
      EXPECT_EQ(x.epoch_time_ns, y.epoch_time_ns) << who << "T";
      EXPECT_EQ(x.load_ns_per_sample, y.load_ns_per_sample) << who << "t_s";
      EXPECT_EQ(x.compute_ns_per_batch, y.compute_ns_per_batch) << who << "compute";
    }
  }

  uint64_t SizeOf(ObjectId id) {
    if (sizes_.empty()) {
      for (const SimJob& j : jobs_) {
        for (const SampleRef& r : j.samples) sizes_[r.object] = r.size;
      }
      for (const ShellObject& o : shell_) sizes_[o.id] = o.size;
    }
    auto it = sizes_.find(id);
    if (it != sizes_.end()) return it->second;
    ADD_FAILURE() << "unknown object " << id;
    return 0;
  }

  // What the policy reports must agree with the shadow store and the orders:
  // the objects the jobs hold are resident, the rest of the resident objects
  // is the shared region, and pool + shared + jobs = budget.
  void ExternalCheck(Harness& hh) {
    Policy& p = hh.policy();
    uint64_t sum = p.pool_bytes() + p.shared_bytes();
    // Scratch kept across calls (ASan's fill and quarantine make each fresh
    // allocation cost page faults).
    IdSet& held = scratch_held_;
    std::vector<uint32_t>& pos = scratch_pos_;
    std::vector<uint32_t>& cur_pos = scratch_cur_pos_;
    std::vector<uint32_t>& per_batch = scratch_per_batch_;  // next's samples per batch
    held.clear();
    for (const JobSnapshot& s : p.Jobs()) {
      sum += s.cur_bytes + s.next_bytes + s.tail_bytes + s.granted_unused_bytes;
      tail_seen_ += s.tail_bytes > 0 ? 1 : 0;
      last_seen_ += s.state == JobState::kLastEpoch && s.cur_bytes > 0 ? 1 : 0;
      const SimJob& j = jobs_[s.id - 1];
      const bool has_next = s.started && j.declared.count(s.epoch + 1) != 0;
      pos.assign(j.n, UINT32_MAX);
      per_batch.clear();
      if (has_next) {
        const std::vector<uint32_t>& o = j.orders.at(s.epoch + 1);
        for (uint32_t i = 0; i < o.size(); ++i) pos[o[i]] = i;
        per_batch.assign(o.size() / j.spec.batch_size + 1, 0);
      }
      cur_pos.assign(j.n, UINT32_MAX);
      const bool has_cur = s.started && j.declared.count(s.epoch) != 0;
      if (has_cur) {
        const std::vector<uint32_t>& o = j.orders.at(s.epoch);
        for (uint32_t i = 0; i < o.size(); ++i) cur_pos[o[i]] = i;
      }
      for (uint32_t x = 0; x < j.n; ++x) {
        const Region r = p.epoch_regions()->Where(s.id, x);
        if (r == Region::kNone) continue;
        held.push_back(j.samples[x].object);
        EXPECT_TRUE(hh.resident(j.samples[x].object)) << "held but not in the store";
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
      for (size_t batch = 0; batch < per_batch.size(); ++batch) {
        EXPECT_LE(per_batch[batch], s.e) << "job " << s.id << " batch " << batch;
      }
      if (s.state == JobState::kLastEpoch || s.state == JobState::kDone) {
        EXPECT_EQ(s.next_bytes, 0u);
        EXPECT_EQ(s.granted_unused_bytes, 0u);
      }
    }
    EXPECT_EQ(sum, budget_) << "budget not conserved";
    std::sort(held.begin(), held.end());
    held.erase(std::unique(held.begin(), held.end()), held.end());
    if (p.shared_bytes() == 0) {
      EXPECT_TRUE(std::equal(held.begin(), held.end(), hh.resident_set().begin(),
                             hh.resident_set().end()))
          << "store and policy disagree";
    } else {
      uint64_t rest = 0;
      for (ObjectId id : hh.resident_set()) {
        if (!Has(held, id)) rest += SizeOf(id);
      }
      for (ObjectId id : held) EXPECT_TRUE(hh.resident(id));
      EXPECT_EQ(rest, p.shared_bytes()) << "resident objects no job holds != shared region";
    }
  }

  IdSet scratch_held_;
  std::vector<uint32_t> scratch_pos_, scratch_cur_pos_, scratch_per_batch_;
  std::mt19937_64 rng_;
  std::mt19937_64 urng_;  // unattributed reads
  std::mt19937_64 brng_;  // budget changes
  Mode mode_;
  bool resize_ = false;
  uint64_t initial_budget_ = 0;
  uint64_t resizes_ = 0;
  uint64_t resize_evictions_ = 0;
  std::vector<SimJob> jobs_;
  std::vector<ShellObject> shell_;
  std::unordered_map<ObjectId, uint64_t> sizes_;  // every object's size
  uint64_t hot_ = 1;
  double unattributed_rate_ = 0;
  uint64_t clock_ = 0;
  uint64_t budget_ = 0;
  std::unique_ptr<Harness> h_;  // share_idle = false (kPlain: the only one)
  std::unique_ptr<Harness> b_;  // share_idle = true (kShared)
  uint64_t b_events_ = 0;
  uint64_t b_admissions_ = 0;
  uint64_t b_hits_ = 0;
  uint64_t shared_hits_ = 0;      // unattributed reads B served from its shared region
  uint64_t job_shared_hits_ = 0;  // job reads B served from its shared region
  uint64_t adoptions_ = 0;        // of which the job adopted the object into next
  uint64_t bulk_adoptions_ = 0;   // shared objects adopted at a warm-up end or epoch start
  uint64_t reclaims_ = 0;         // shared objects B evicted for a job's grant
  uint64_t unattributed_ = 0;
  uint64_t events_ = 0;
  uint64_t digest_ = 0;
  uint64_t hits_ = 0;
  uint64_t reads_ = 0;
  uint64_t admissions_ = 0;
  uint64_t taken_ = 0;      // evictions of another job's sample on a read (S37)
  uint64_t tail_seen_ = 0;  // checks that saw a job with a tail
  uint64_t last_seen_ = 0;  // checks that saw a last-epoch job draining cur
};

constexpr uint64_t kGolden[24] = {
    // Recorded from the policy before the shared region existed (same seeds).
    0x0bdac868729c61dbULL, 0x341d3131af81eaebULL, 0xca506c0c000b505dULL, 0x1329cb8bc770d84bULL,
    0x41faf802ecd2444aULL, 0xde3993dc61f96a6cULL, 0x5f2c7cc9c1018aa5ULL, 0x6ebdfc4953325161ULL,
    0x6949663b6842f7e2ULL, 0x656fe08ba59fad1cULL, 0xe94262349f2ef198ULL, 0xf9c88c1f7370582cULL,
    0xdc9163312e86d23dULL, 0x0ed8e71b582714e6ULL, 0x63dd6899250f0c26ULL, 0x8f4bbd21b7f15824ULL,
    0xbd17d29ffa4e081eULL, 0x8ba94a56cdd49226ULL, 0x209a4e020f9d6791ULL, 0xa46ca7a5b767083bULL,
    0xa558ca1069032b67ULL, 0xc7737b079cd28539ULL, 0xab1be8b2f9b52e34ULL, 0x4823b7f264bcff76ULL,
};

class EpochPolicyRandom : public ::testing::TestWithParam<uint64_t> {};

// share_idle = false: the invariants, and exactly the decisions of the policy
// before the shared region.
TEST_P(EpochPolicyRandom, InvariantsHoldOnEveryEvent) {
  RandomSchedule s(GetParam());
  s.Run();
  RecordProperty("events", std::to_string(s.events()));
  EXPECT_GT(s.reads(), 20u);
  EXPECT_EQ(s.digest(), kGolden[GetParam() - 1])
      << "share_idle = false no longer decides exactly as before";
}

// share_idle = true with unattributed reads interleaved, in lockstep with
// share_idle = false.
TEST_P(EpochPolicyRandom, SharedRegionNeverCostsAJobAnything) {
  RandomSchedule s(GetParam(), Mode::kShared);
  s.Run();
  RecordProperty("events", std::to_string(s.b_events()));
  EXPECT_GT(s.reads(), 20u);
}

// The same schedules with the budget changing between events: every
// invariant holds after every event and every SetBudget.
TEST_P(EpochPolicyRandom, InvariantsHoldWhileTheBudgetChanges) {
  RandomSchedule s(GetParam(), Mode::kPlain, Budget::kResize);
  s.Run();
  EXPECT_GT(s.reads(), 20u);
  EXPECT_GT(s.resizes(), 0u);
}

// ... and in lockstep with the shared region: a budget change costs a job the
// same with or without it (the shared region gives its bytes back first).
TEST_P(EpochPolicyRandom, SharedRegionNeverCostsAJobAnythingWhileTheBudgetChanges) {
  RandomSchedule s(GetParam(), Mode::kShared, Budget::kResize);
  s.Run();
  EXPECT_GT(s.resizes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, EpochPolicyRandom,
                         ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                           16, 17, 18, 19, 20, 21, 22, 23, 24));

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

// Budget changes happen and shrinks do evict.
TEST(EpochPolicyRandomAggregate, BudgetChangesEvict) {
  uint64_t resizes = 0, evictions = 0;
  for (uint64_t seed = 100; seed < 110; ++seed) {
    RandomSchedule s(seed, Mode::kShared, Budget::kResize);
    s.Run();
    resizes += s.resizes();
    evictions += s.resize_evictions();
  }
  EXPECT_GT(resizes, 50u);
  EXPECT_GT(evictions, 0u);
  std::printf("budget changes: %llu SetBudget calls, %llu objects evicted by shrinks\n",
              static_cast<unsigned long long>(resizes),
              static_cast<unsigned long long>(evictions));
}

// The shared-region schedules reach its paths: unattributed hits, job reads
// served from it, adoptions, reclaims by grants.
TEST(EpochPolicyRandomAggregate, SharedSchedulesReachEveryPath) {
  uint64_t events = 0, unattributed = 0, shared_hits = 0, job_shared = 0, adoptions = 0,
           reclaims = 0, hits_a = 0, hits_b = 0, reads = 0, bulk = 0;
  for (uint64_t seed = 100; seed < 110; ++seed) {
    RandomSchedule s(seed, Mode::kShared);
    s.Run();
    events += s.b_events();
    unattributed += s.unattributed();
    shared_hits += s.shared_hits();
    job_shared += s.job_shared_hits();
    adoptions += s.adoptions();
    bulk += s.bulk_adoptions();
    reclaims += s.reclaims();
    hits_a += s.hits();
    hits_b += s.b_hits();
    reads += s.reads();
  }
  EXPECT_GT(shared_hits, 0u);
  EXPECT_GT(job_shared, 0u);
  EXPECT_GT(adoptions, 0u);
  EXPECT_GT(bulk, 0u);
  EXPECT_GT(reclaims, 0u);
  EXPECT_GE(hits_b, hits_a);
  std::printf("shared schedules: %llu events, %llu unattributed reads (%llu hits in the shared "
              "region), %llu job reads: %llu hits without / %llu with the shared region "
              "(%llu from it, %llu adopted on a read, %llu adopted at a warm-up end or "
              "epoch start), %llu shared objects reclaimed by grants\n",
              static_cast<unsigned long long>(events),
              static_cast<unsigned long long>(unattributed),
              static_cast<unsigned long long>(shared_hits), static_cast<unsigned long long>(reads),
              static_cast<unsigned long long>(hits_a), static_cast<unsigned long long>(hits_b),
              static_cast<unsigned long long>(job_shared), static_cast<unsigned long long>(adoptions),
              static_cast<unsigned long long>(bulk),
              static_cast<unsigned long long>(reclaims));
}

}  // namespace
}  // namespace epochfs::cache
