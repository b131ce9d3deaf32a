// The multi-job epoch policy of seed 000 (patent CN114968588A).
// docs/policy.md is the prose version of this file; keep them in step.
//
// Accounting (all in bytes): every byte of the budget is either in the global
// free pool or charged to exactly one job, as one of
//   bytes_[kCur] + bytes_[kNext] + bytes_[kTail]  objects the job holds,
//   free                                          quota granted, not filled yet.
// An object held by several jobs (same file in two datasets) is charged to each
// holder and stored once; it leaves the store when its last holder releases it.
//
// Shared region (params.share_idle): reads no job claims (no job, an unknown
// job, a job in warm-up or done, a file outside the job's sample list) are
// cached LRU in the idle part of the pool. Those bytes are counted apart
// (shared_) and are strictly subordinate: every grant to a job is computed
// against pool_ + shared_, exactly as if the shared region were free, and then
// evicts shared objects, least recently used first, until pool_ covers it. It
// never takes a byte from a job.
//   pool_ + shared_ + Σ_jobs (cur + next + tail + free) == budget
// An object is either held by jobs (refs > 0) or shared (refs == 0), never both;
// a job admitting a shared object adopts it (no reload), and so does a job
// leaving warm-up (the shared objects of its next order, into `next`, within its
// reservation) or starting an epoch (those of the epoch's order, into `cur`,
// within its unused quota) instead of evicting what it is about to read.
//
// Per access the work is a few hash lookups and O(1) vector updates: sample →
// position maps of the current and next orders are dense vectors built once
// when an order is declared, regions are vectors with swap-pop removal.
#include "epochfs/cache/epoch_policy.h"

#include "epochfs/cache/declaration_rules.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <list>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace epochfs::cache {

const char* RegionName(Region r) {
  switch (r) {
    case Region::kNone: return "none";
    case Region::kCur: return "cur";
    case Region::kNext: return "next";
    case Region::kTail: return "tail";
  }
  return "?";
}

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kWarmup: return "warmup";
    case JobState::kCaching: return "caching";
    case JobState::kLastEpoch: return "last_epoch";
    case JobState::kDone: return "done";
  }
  return "?";
}

uint64_t ExpectedRemainingNs(const JobSnapshot& s) {
  if (s.epochs == 0 || s.epoch_time_ns == 0 || s.state == JobState::kDone ||
      s.epoch >= s.epochs) {
    return 0;
  }
  const uint64_t left = s.epochs - s.epoch;
  if (s.epoch_time_ns > UINT64_MAX / left) return UINT64_MAX;
  return left * s.epoch_time_ns;
}

namespace {

constexpr int32_t kAbsent = -1;
constexpr int kRegions = 4;  // indexed by Region; kNone unused

// An epoch's order: a permutation of a subset of the sample indices.
struct Order {
  std::vector<uint32_t> idx;
  std::vector<int32_t> pos;  // sample -> position in idx, or kAbsent
  int32_t PosOf(uint32_t sample) const { return pos[sample]; }
  uint64_t size() const { return idx.size(); }
};

struct Job {
  JobSpec spec;
  std::vector<SampleRef> samples;
  uint64_t known_size_sum = 0;  // over samples with size > 0
  uint64_t known_size_n = 0;
  uint64_t access_size_sum = 0;  // fallback when the list has no sizes
  uint64_t access_size_n = 0;
  std::map<uint32_t, Order> orders;  // declared, by epoch

  JobState state = JobState::kWarmup;
  bool started = false;
  uint32_t epoch = 0;
  const Order* cur_order = nullptr;   // nullptr: implicit (every sample once)
  const Order* next_order = nullptr;  // nullptr: not declared yet
  const Order* prev_order = nullptr;  // of the tail's epoch (nullptr: implicit)
  uint64_t consumed = 0;              // distinct samples of the current order read
  uint64_t tail_until = 0;            // consumed count at which the tail is released
  uint64_t epoch_start_ns = 0;

  // Per sample: region, slot in that region's list, epoch+1 when last consumed.
  std::vector<uint8_t> where;
  std::vector<uint32_t> slot;
  std::vector<uint32_t> seen;
  std::vector<uint32_t> lists[kRegions];
  uint64_t bytes[kRegions] = {};
  uint64_t free = 0;                             // granted but unused
  std::vector<uint32_t> counters;                // per batch of next_order
  std::unordered_map<ObjectId, uint32_t> held;   // object -> sample held

  // Warm-up measurements and derived figures.
  uint64_t warm_load_sum = 0;
  uint64_t warm_load_n = 0;
  uint64_t epoch_time_ns = 0;
  uint64_t load_ns = 0;
  uint64_t compute_ns = 0;
  uint32_t e = 0;
  uint64_t reserved = 0;
  uint64_t need = 0;
  uint64_t need_batches = 0;
  uint64_t need_sample_bytes = 0;
  bool measured = false;  // FinishWarmup ran: e, need and T are estimates
  double lambda = 0.0;
  int32_t rank = -1;

  EpochCounters cur_stats;
  EpochCounters prev_stats;

  uint64_t N() const { return samples.size(); }
  uint64_t CurLen() const { return cur_order ? cur_order->size() : N(); }
  bool InCur(uint32_t x) const { return cur_order == nullptr || cur_order->PosOf(x) != kAbsent; }
  uint64_t MeanSize() const {
    if (known_size_n > 0) return known_size_sum / known_size_n;
    if (access_size_n > 0) return access_size_sum / access_size_n;
    return 0;
  }
  uint64_t Held() const { return bytes[1] + bytes[2] + bytes[3]; }
  bool LastEpoch() const { return spec.epochs > 0 && epoch + 1 >= spec.epochs; }
};

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

class EpochPolicy final : public Policy, public EpochRegions {
 public:
  explicit EpochPolicy(const EpochPolicyParams& p)
      : params_(p), pool_(p.budget_bytes), rng_(p.seed ^ 0x9e3779b97f4a7c15ULL) {}

  const char* name() const override { return "epoch"; }
  uint64_t budget() const override { return params_.budget_bytes; }
  uint64_t resident_bytes() const override { return resident_; }
  uint64_t pool_bytes() const override { return pool_; }
  uint64_t shared_bytes() const override { return shared_; }

  Decision OnHit(const Access& a) override { return OnAccess(a, /*hit=*/true, 0); }
  Decision OnMiss(const Access& a, uint64_t load_ns) override {
    return OnAccess(a, /*hit=*/false, load_ns);
  }

  void OnDropped(ObjectId id) override {
    DropObject(id);
    DebugCheck();
  }

  Status AddJob(const JobSpec& spec) override {
    if (Status s = CheckNewJob(spec, jobs_.count(spec.id) != 0); !s.ok()) return s;
    auto job = std::make_unique<Job>();
    job->spec = spec;
    if (job->spec.loaders == 0) job->spec.loaders = 1;
    jobs_.emplace(spec.id, std::move(job));
    return Status::Ok();
  }

  Status SetSamples(JobId id, std::vector<SampleRef> samples) override {
    Job* j = FindJob(id);
    if (j == nullptr) return NotFound("no job " + std::to_string(id));
    if (Status s = CheckSamples(samples.size(), !j->orders.empty() || j->started); !s.ok()) {
      return s;
    }
    j->known_size_sum = 0;
    j->known_size_n = 0;
    for (const SampleRef& s : samples) {
      if (s.size > 0) {
        j->known_size_sum += s.size;
        ++j->known_size_n;
      }
    }
    j->samples = std::move(samples);
    const size_t n = j->samples.size();
    j->where.assign(n, static_cast<uint8_t>(Region::kNone));
    j->slot.assign(n, 0);
    j->seen.assign(n, 0);
    return Status::Ok();
  }

  Status SetOrder(JobId id, uint32_t epoch, std::vector<uint32_t> order) override {
    Job* j = FindJob(id);
    if (j == nullptr) return NotFound("no job " + std::to_string(id));
    const std::string what = "order " + std::to_string(epoch) + ": ";
    Order o;
    if (Status s = CheckOrder({j->samples.size(), j->spec.epochs, j->started, j->epoch}, epoch,
                              order, &o.pos);
        !s.ok()) {
      return s;
    }
    o.idx = std::move(order);
    auto it = j->orders.find(epoch);
    if (it != j->orders.end()) {
      const bool in_use = j->started && (epoch == j->epoch || epoch == j->epoch + 1);
      if (in_use) {
        if (it->second.idx == o.idx) return Status::Ok();  // same content: idempotent
        return InvalidArgument(what + "epoch " + std::to_string(epoch) +
                               "'s order is in use and cannot be replaced");
      }
      it->second = std::move(o);  // not referenced by cur/next/prev
      return Status::Ok();
    }
    if (j->orders.size() >= kMaxDeclaredOrders) {
      return InvalidArgument(what + "too many orders declared ahead (at most " +
                             std::to_string(kMaxDeclaredOrders) + ")");
    }
    Order& stored = j->orders.emplace(epoch, std::move(o)).first->second;
    if (j->started) {
      if (epoch == j->epoch) {
        j->cur_order = &stored;  // was implicit until now
        NarrowCur(*j);
      } else if (epoch == j->epoch + 1) {
        j->next_order = &stored;
        ResetCounters(*j);
      }
    }
    DebugCheck();
    return Status::Ok();
  }

  Result<Decision> BeginEpoch(JobId id, uint32_t epoch, uint64_t now_ns) override {
    Job* j = FindJob(id);
    if (j == nullptr) return NotFound("no job " + std::to_string(id));
    if (j->samples.empty()) return InvalidArgument("the sample list must be written first");
    if (j->spec.epochs > 0 && epoch >= j->spec.epochs) {
      return InvalidArgument("epoch " + std::to_string(epoch) + " is past the job's " +
                             std::to_string(j->spec.epochs) + " epochs");
    }
    if (j->started && epoch < j->epoch) {
      return InvalidArgument("epoch " + std::to_string(epoch) + " is before the current epoch " +
                             std::to_string(j->epoch));
    }
    Decision d;
    StartEpoch(*j, epoch, now_ns);
    Flush(&d);
    DebugCheck();
    return d;
  }

  Status RestartEpoch(JobId id, uint64_t now_ns) override {
    Job* j = FindJob(id);
    if (j == nullptr) return NotFound("no job " + std::to_string(id));
    if (!j->started) return Status::Ok();
    const uint32_t mark = j->epoch + 1;
    for (uint32_t& s : j->seen) {
      if (s == mark) s = 0;
    }
    j->consumed = 0;
    // The warm-up's clock restarts too: the time the job was dead is not
    // epoch time. Its load measurements stay (they measure lower storage).
    j->epoch_start_ns = now_ns;
    DebugCheck();
    return Status::Ok();
  }

  Result<Decision> EndJob(JobId id) override {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return NotFound("no job " + std::to_string(id));
    Job& j = *it->second;
    ReleaseAll(j);
    LeaveList(j);
    jobs_.erase(it);
    Decision d;
    Flush(&d);
    DebugCheck();
    return d;
  }

  // Growing adds to the pool. Shrinking frees `old − bytes` in this order,
  // least valuable first (docs/policy.md, "Budget changes"): the truly free
  // pool; the shared region (LRU first); quota granted but not filled; the
  // tails (late reads only); `next` regions, jobs in the order S37 takes
  // space (head of the sorted list first), random victims as in S37; `cur`
  // regions, the sample read last in the current order first.
  Result<Decision> SetBudget(uint64_t bytes) override {
    Decision d;
    const uint64_t old = params_.budget_bytes;
    if (bytes >= old) {
      pool_ += bytes - old;
      params_.budget_bytes = bytes;
      DebugCheck();
      return d;
    }
    const uint64_t need = old - bytes;
    FreeForShrink(need);
    assert(pool_ >= need);
    pool_ -= need;
    params_.budget_bytes = bytes;
    Flush(&d);
    DebugCheck();
    return d;
  }

  std::vector<JobSnapshot> Jobs() const override {
    std::vector<JobSnapshot> out;
    out.reserve(jobs_.size());
    const uint64_t share = DefaultShare();
    for (const auto& [id, jp] : jobs_) {
      const Job& j = *jp;
      JobSnapshot s;
      s.id = id;
      s.name = j.spec.name;
      s.state = j.state;
      s.started = j.started;
      s.epoch = j.epoch;
      s.epochs = j.spec.epochs;
      s.epoch_samples = j.samples.empty() ? 0 : j.CurLen();
      s.batch = j.consumed / j.spec.batch_size;
      s.current = j.cur_stats;
      s.previous = j.prev_stats;
      s.cur_bytes = j.bytes[static_cast<int>(Region::kCur)];
      s.next_bytes = j.bytes[static_cast<int>(Region::kNext)];
      s.tail_bytes = j.bytes[static_cast<int>(Region::kTail)];
      s.granted_unused_bytes = j.free;
      s.default_alloc_bytes = j.state == JobState::kDone ? 0 : share;
      s.reserved_bytes = j.reserved;
      s.need_bytes = j.need;
      s.need_measured = j.measured;
      s.need_batches = j.need_batches;
      s.need_sample_bytes = j.need_sample_bytes;
      s.rank = j.rank;
      s.lambda = j.lambda;
      s.h = H(j, share);
      s.e = j.e;
      s.epoch_time_ns = j.epoch_time_ns;
      s.load_ns_per_sample = j.load_ns;
      s.compute_ns_per_batch = j.compute_ns;
      s.mean_sample_bytes = j.MeanSize();
      out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end(),
              [](const JobSnapshot& a, const JobSnapshot& b) { return a.id < b.id; });
    return out;
  }

  const EpochRegions* epoch_regions() const override { return this; }

  Region Where(JobId id, uint32_t sample) const override {
    auto it = jobs_.find(id);
    if (it == jobs_.end() || sample >= it->second->where.size()) return Region::kNone;
    return static_cast<Region>(it->second->where[sample]);
  }

  std::vector<uint32_t> NextCounters(JobId id) const override {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return {};
    return it->second->counters;
  }

  Status CheckInvariants() const override;

 private:
  struct Obj {
    uint64_t size = 0;
    uint32_t refs = 0;     // (job, sample) holdings
    bool shared = false;   // in the shared region (then refs == 0)
    uint64_t load_ns = 0;  // load time of the miss that admitted it
    std::list<ObjectId>::iterator lru{};  // position in lru_ when shared
  };

  Job* FindJob(JobId id) {
    auto it = jobs_.find(id);
    return it == jobs_.end() ? nullptr : it->second.get();
  }

  uint64_t Rand() {  // splitmix64: the same victims on every platform
    uint64_t z = (rng_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // C_i: an equal share of the budget among the jobs still running.
  uint64_t DefaultShare() const {
    uint64_t n = 0;
    for (const auto& [id, j] : jobs_) n += j->state != JobState::kDone ? 1 : 0;
    return n == 0 ? params_.budget_bytes : params_.budget_bytes / n;
  }

  // h_i = b_i·C_i/N_i with C_i in samples (bytes / mean sample size), ≤ b_i.
  static double H(const Job& j, uint64_t share) {
    const uint64_t mean = j.MeanSize();
    if (mean == 0 || j.samples.empty()) return 0.0;
    const double c_samples = static_cast<double>(share) / static_cast<double>(mean);
    const double h = static_cast<double>(j.spec.batch_size) * c_samples /
                     static_cast<double>(j.CurLen());
    return std::min(h, static_cast<double>(j.spec.batch_size));
  }

  uint32_t TailBatches(const Job& j) const {
    return params_.tail_batches != 0 ? params_.tail_batches : 2 * j.spec.loaders;
  }

  // The sample an access refers to, or -1: the index must match the sample
  // list; otherwise the object is looked up among the job's holdings.
  static int64_t ResolveSample(const Job& j, const Access& a) {
    if (a.sample >= 0 && static_cast<uint64_t>(a.sample) < j.N() &&
        j.samples[a.sample].object == a.object) {
      return a.sample;
    }
    auto it = j.held.find(a.object);
    // (int64_t on both arms: `-1 : uint32_t` would be 2^32 - 1.)
    return it == j.held.end() ? int64_t{-1} : int64_t{it->second};
  }

  Decision OnAccess(const Access& a, bool hit, uint64_t load_ns) {
    Decision d;
    // A miss on an object we hold means the store lost it without telling.
    if (!hit && objects_.count(a.object) != 0) DropObject(a.object);
    // A hit on a shared object makes it the most recently used (before any
    // grant of this event reclaims shared space).
    if (hit) {
      auto it = objects_.find(a.object);
      if (it != objects_.end() && it->second.shared) {
        lru_.splice(lru_.end(), lru_, it->second.lru);
      }
    }
    // A block of a file read in blocks (Access::file) is no sample of the
    // job's: the epoch policy sees it as an unattributed read, as a file
    // streamed past the cache was before blocks.
    Job* jp = a.file != 0 ? nullptr : FindJob(a.job);
    bool claimed = false;
    if (jp != nullptr && !jp->samples.empty()) claimed = Serve(*jp, a, hit, load_ns, &d);
    if (!claimed && !hit && params_.share_idle) AdmitShared(a, load_ns, &d);
    Flush(&d);
    DebugCheck();
    return d;
  }

  // Returns whether the job claims the read (then only the job's rules apply):
  // it is caching or in its last epoch and the object is one of its samples.
  bool Serve(Job& j, const Access& a, bool hit, uint64_t load_ns, Decision* d) {
    if (!j.started) {  // no marker yet: the first declared epoch (or 0) begins now
      StartEpoch(j, j.orders.empty() ? 0 : j.orders.begin()->first, a.now_ns);
    }
    if (j.state == JobState::kDone) return false;
    (hit ? j.cur_stats.hits : j.cur_stats.misses)++;
    if (a.size > 0) {
      j.access_size_sum += a.size;
      ++j.access_size_n;
    }
    const int64_t xs = ResolveSample(j, a);
    if (xs < 0) return false;
    const uint32_t x = static_cast<uint32_t>(xs);
    const bool claimed = j.state != JobState::kWarmup;
    if (j.state == JobState::kWarmup) {
      if (!hit) {
        j.warm_load_sum += load_ns;
        ++j.warm_load_n;
      } else {
        // Served from the shared region: what loading it cost when it was
        // loaded still measures the lower storage (t_s is not biased by it).
        auto it = objects_.find(a.object);
        if (it != objects_.end() && it->second.shared) {
          j.warm_load_sum += it->second.load_ns;
          ++j.warm_load_n;
        }
      }
    }

    const Region r = static_cast<Region>(j.where[x]);
    if (r == Region::kCur || r == Region::kTail) {  // S33: a hit in cur frees its bytes
      pool_ += Unhold(j, x);
    }
    // A hit in the tail is a late read of the previous epoch (loaders read
    // ahead and out of order): it neither counts nor admits for this epoch.
    if (r == Region::kTail) return claimed;
    if (j.InCur(x) && j.seen[x] != j.epoch + 1) {
      j.seen[x] = j.epoch + 1;
      ++j.consumed;
      // Admission first (S34–S37), then the progress that may end warm-up,
      // release the tail or finish the last epoch.
      if (j.state == JobState::kCaching) TryAdmit(j, x, a, hit, d);
      Progress(j, a.now_ns);
      return claimed;
    }
    // A re-read, or a sample outside the current order (an early read of the
    // next epoch): it may still enter `next`.
    if (j.state == JobState::kCaching) TryAdmit(j, x, a, hit, d);
    return claimed;
  }

  // An unclaimed miss enters the shared region (most recently used) when it
  // fits in the idle bytes (pool + shared), evicting least recently used
  // shared objects as needed. Empty files are not worth an entry.
  void AdmitShared(const Access& a, uint64_t load_ns, Decision* d) {
    if (a.size == 0 || a.size > pool_ + shared_ || objects_.count(a.object) != 0) return;
    TakeFromPool(a.size);
    shared_ += a.size;
    Obj o;
    o.size = a.size;
    o.shared = true;
    o.load_ns = load_ns;
    o.lru = lru_.insert(lru_.end(), a.object);
    objects_.emplace(a.object, o);
    resident_ += a.size;
    d->admit = true;
  }

  // Takes `n` bytes out of the pool for a job, evicting shared objects (least
  // recently used first) while the truly free bytes do not cover it. The
  // caller has checked n <= pool_ + shared_.
  void TakeFromPool(uint64_t n) {
    assert(n <= pool_ + shared_);
    while (pool_ < n) ReclaimOneShared();
    pool_ -= n;
  }

  // The least recently used shared object leaves; its bytes go to the pool.
  void ReclaimOneShared() {
    const ObjectId id = lru_.front();
    auto it = objects_.find(id);
    assert(it != objects_.end() && it->second.shared);
    const uint64_t size = it->second.size;
    lru_.pop_front();
    shared_ -= size;
    pool_ += size;
    resident_ -= size;
    objects_.erase(it);
    reclaimed_.push_back(id);
  }

  // SetBudget's shrink: moves bytes into the pool until pool_ >= need (always
  // possible: everything returned, the pool is the old budget).
  void FreeForShrink(uint64_t need) {
    while (pool_ < need && !lru_.empty()) ReclaimOneShared();
    // Jobs in a fixed order: the sorted list (head first), then the others by id.
    std::vector<Job*> order(list_.begin(), list_.end());
    std::vector<Job*> rest;
    for (auto& [id, jp] : jobs_) {
      if (jp->rank < 0) rest.push_back(jp.get());
    }
    std::sort(rest.begin(), rest.end(),
              [](const Job* a, const Job* b) { return a->spec.id < b->spec.id; });
    order.insert(order.end(), rest.begin(), rest.end());
    for (Job* j : order) {
      const uint64_t take = std::min(j->free, need - std::min(need, pool_));
      j->free -= take;
      pool_ += take;
    }
    const int tl = static_cast<int>(Region::kTail);
    const int nx = static_cast<int>(Region::kNext);
    const int cu = static_cast<int>(Region::kCur);
    for (Job* j : order) {
      while (pool_ < need && !j->lists[tl].empty()) pool_ += Unhold(*j, j->lists[tl].back());
    }
    for (Job* j : order) {
      while (pool_ < need && !j->lists[nx].empty()) {
        const std::vector<uint32_t>& list = j->lists[nx];
        pool_ += Unhold(*j, list[Rand() % list.size()]);
      }
    }
    for (Job* j : order) {
      if (pool_ >= need) break;
      std::vector<uint32_t> victims = j->lists[cu];
      if (j->cur_order != nullptr) {  // read last in this epoch: evicted first
        const Order& o = *j->cur_order;
        std::sort(victims.begin(), victims.end(),
                  [&o](uint32_t a, uint32_t b) { return o.PosOf(a) < o.PosOf(b); });
      }
      while (pool_ < need && !victims.empty()) {
        pool_ += Unhold(*j, victims.back());
        victims.pop_back();
      }
    }
  }

  // A shared object leaves (or re-enters, at the most recent end) the shared
  // region, its bytes going to (coming from) the truly free pool.
  void Unshare(Obj& o) {
    lru_.erase(o.lru);
    o.shared = false;
    shared_ -= o.size;
    pool_ += o.size;
  }
  void Reshare(ObjectId id, Obj& o) {
    pool_ -= o.size;
    shared_ += o.size;
    o.shared = true;
    o.lru = lru_.insert(lru_.end(), id);
  }

  // Batch boundaries, warm-up end, tail release, last-epoch end.
  void Progress(Job& j, uint64_t now) {
    const uint64_t len = j.CurLen();
    const uint64_t b = j.spec.batch_size;
    const bool batch_done = j.consumed % b == 0 || j.consumed >= len;
    if (!batch_done) return;
    if (j.state == JobState::kWarmup) {
      const bool whole = j.consumed >= len;
      if ((params_.warmup_batches == 0 && whole) ||
          (params_.warmup_batches > 0 &&
           (CeilDiv(j.consumed, b) >= params_.warmup_batches || whole))) {
        FinishWarmup(j, now, /*ended=*/false);
      }
    }
    if (!j.lists[static_cast<int>(Region::kTail)].empty() && j.consumed >= j.tail_until) {
      ReleaseTail(j);
    }
    if (j.state == JobState::kLastEpoch && j.consumed >= len) {
      ReleaseAll(j);
      j.state = JobState::kDone;
    }
  }

  // Step 1 ends: T, t_s, compute, e_i; join the sorted list; reserve (S31).
  // `ended`: the warm-up epoch is over (the next one began), so its length is
  // what was read; otherwise the epoch is either complete or, after
  // warmup_batches batches, extrapolated to its full length.
  void FinishWarmup(Job& j, uint64_t now, bool ended) {
    const uint64_t b = j.spec.batch_size;
    const uint64_t elapsed = now > j.epoch_start_ns ? now - j.epoch_start_ns : 0;
    uint64_t batches = CeilDiv(j.CurLen(), b);  // of a whole epoch
    uint64_t interval = 0;                      // between batch completions
    if (ended || j.consumed >= j.CurLen()) {
      if (ended) batches = std::max<uint64_t>(1, CeilDiv(j.consumed, b));
      j.epoch_time_ns = elapsed;
      interval = elapsed / batches;
    } else {
      const uint64_t done = std::max<uint64_t>(1, j.consumed / b);
      interval = elapsed / done;
      j.epoch_time_ns = static_cast<uint64_t>(static_cast<double>(elapsed) *
                                              static_cast<double>(batches) /
                                              static_cast<double>(done));
    }
    j.load_ns = j.warm_load_n == 0 ? 0 : j.warm_load_sum / j.warm_load_n;
    if (j.spec.compute_ns_per_batch != 0) {
      j.compute_ns = j.spec.compute_ns_per_batch;
    } else {
      // Interval between batch completions minus the wall time W loaders need
      // to load one batch: what is left is compute the loads could hide behind.
      const uint64_t load_wall = b * j.load_ns / j.spec.loaders;
      j.compute_ns = interval > load_wall ? interval - load_wall : 0;
    }
    if (j.load_ns == 0) {
      j.e = j.spec.batch_size;  // loads never measured: want everything
    } else {
      const uint64_t hidden = j.spec.loaders * j.compute_ns / j.load_ns;
      j.e = hidden >= b ? 0 : static_cast<uint32_t>(b - hidden);
    }
    j.need_sample_bytes = j.MeanSize();
    j.need = static_cast<uint64_t>(j.e) * batches * j.need_sample_bytes;
    j.need_batches = batches;
    j.measured = true;
    if (j.LastEpoch()) {
      j.state = JobState::kLastEpoch;
      return;
    }
    j.state = JobState::kCaching;
    j.reserved = std::min({DefaultShare(), j.need, pool_ + shared_});
    list_.push_back(&j);
    SortList();
    // Shared objects the job reads in its next epoch (typically its own warm-up
    // reads) are adopted into `next` within the reservation before the rest of
    // it is taken, so that taking it cannot evict them (docs/policy.md,
    // "Adoption at the end of warm-up").
    uint64_t adopted = 0;
    if (j.next_order != nullptr) {
      adopted = AdoptShared(j, j.next_order, Region::kNext, j.reserved);
    }
    TakeFromPool(j.reserved - adopted);
    j.free += j.reserved - adopted;
  }

  // Moves shared objects of the samples of `order` (nullptr: every sample), in
  // order, into region r of job j, each charged to the job, while their sizes
  // fit in `limit` bytes; `next` respects the batch counters (S36). The bytes
  // go from the shared region straight to the job: the pool does not change.
  // Returns the bytes adopted. Nothing happens without shared objects, so a
  // policy with share_idle = false decides exactly as before.
  uint64_t AdoptShared(Job& j, const Order* order, Region r, uint64_t limit) {
    uint64_t used = 0;
    const uint64_t len = order != nullptr ? order->size() : j.N();
    for (uint64_t p = 0; p < len && !lru_.empty() && used < limit; ++p) {
      const uint32_t x = order != nullptr ? order->idx[p] : static_cast<uint32_t>(p);
      if (j.where[x] != static_cast<uint8_t>(Region::kNone)) continue;
      const ObjectId id = j.samples[x].object;
      auto oit = objects_.find(id);
      if (oit == objects_.end() || !oit->second.shared || j.held.count(id) != 0) continue;
      Obj& o = oit->second;
      if (o.size > limit - used) continue;
      if (r == Region::kNext) {
        uint32_t& c = j.counters[p / j.spec.batch_size];
        if (c >= j.e) continue;
        ++c;
      }
      Unshare(o);
      pool_ -= o.size;
      ++o.refs;
      Hold(j, x, r, o.size);
      used += o.size;
    }
    return used;
  }

  // The current epoch ran without an order (every sample) and now has one:
  // what `cur` holds outside it goes back to the shared region (an implicit
  // `cur` fills only by adopting shared objects), and only reads of samples
  // in the order count as consumed, so the epoch neither keeps samples it will
  // not read nor ends before its order is read. O(N + cur).
  void NarrowCur(Job& j) {
    std::vector<uint32_t> out;
    for (uint32_t x : j.lists[static_cast<int>(Region::kCur)]) {
      if (!j.InCur(x)) out.push_back(x);
    }
    for (uint32_t x : out) {
      const ObjectId id = j.samples[x].object;
      pool_ += Unhold(j, x);
      Obj& o = objects_.at(id);
      if (o.refs == 0 && params_.share_idle) {
        pending_.erase(std::remove(pending_.begin(), pending_.end(), id), pending_.end());
        Reshare(id, o);
      }
    }
    j.consumed = 0;
    for (uint32_t x : j.cur_order->idx) j.consumed += j.seen[x] == j.epoch + 1 ? 1 : 0;
  }

  // Sample x (not held) enters region r with s bytes.
  void Hold(Job& j, uint32_t x, Region r, uint64_t s) {
    const int ri = static_cast<int>(r);
    j.where[x] = static_cast<uint8_t>(r);
    j.slot[x] = static_cast<uint32_t>(j.lists[ri].size());
    j.lists[ri].push_back(x);
    j.bytes[ri] += s;
    j.held.emplace(j.samples[x].object, x);
  }

  // Jobs sorted by T ascending (ties by id); λ by rank (step 1).
  void SortList() {
    std::sort(list_.begin(), list_.end(), [](const Job* a, const Job* b) {
      if (a->epoch_time_ns != b->epoch_time_ns) return a->epoch_time_ns < b->epoch_time_ns;
      return a->spec.id < b->spec.id;
    });
    const double tmin = list_.empty() ? 0 : static_cast<double>(list_.front()->epoch_time_ns);
    const double tmax = list_.empty() ? 0 : static_cast<double>(list_.back()->epoch_time_ns);
    for (size_t i = 0; i < list_.size(); ++i) {
      Job& j = *list_[i];
      j.rank = static_cast<int32_t>(i);
      j.lambda = tmax > tmin ? params_.gain_max * (tmax - static_cast<double>(j.epoch_time_ns)) /
                                   (tmax - tmin)
                             : 1.0;
    }
  }

  void LeaveList(Job& j) {
    auto it = std::find(list_.begin(), list_.end(), &j);
    if (it == list_.end()) return;
    list_.erase(it);
    j.rank = -1;
    j.lambda = 0.0;
    SortList();
  }

  void ResetCounters(Job& j) {
    j.counters.assign(j.next_order ? CeilDiv(j.next_order->size(), j.spec.batch_size) : 0, 0);
  }

  void StartEpoch(Job& j, uint32_t epoch, uint64_t now) {
    if (j.started && epoch == j.epoch) return;
    if (!j.started) {
      j.started = true;
    } else {
      if (j.state == JobState::kWarmup) FinishWarmup(j, now, /*ended=*/true);
      ReleaseTail(j);
      // The unused part of cur becomes the tail; next becomes cur.
      MoveRegion(j, Region::kCur, Region::kTail);
      if (epoch == j.epoch + 1) {
        MoveRegion(j, Region::kNext, Region::kCur);
      } else {
        ReleaseRegion(j, Region::kNext);  // filled for an epoch that was skipped
      }
      // The tail's order is kept while the tail lives (for invariant checks).
      j.prev_order = j.lists[static_cast<int>(Region::kTail)].empty() ? nullptr : j.cur_order;
      j.tail_until = static_cast<uint64_t>(TailBatches(j)) * j.spec.batch_size;
      j.prev_stats = j.cur_stats;
    }
    j.epoch = epoch;
    j.cur_stats = EpochCounters{epoch, 0, 0};
    j.consumed = 0;
    j.epoch_start_ns = now;
    DropOldOrders(j);
    auto cur = j.orders.find(epoch);
    j.cur_order = cur == j.orders.end() ? nullptr : &cur->second;
    auto next = j.orders.find(epoch + 1);
    j.next_order = next == j.orders.end() ? nullptr : &next->second;
    ResetCounters(j);
    // Shared objects this epoch reads are resident at its start: they are
    // `cur` for it, adopted within the job's granted-but-unused quota (whose
    // bytes go back to the pool, as the hit will return the object's).
    if (j.state == JobState::kCaching && j.free > 0 && !lru_.empty()) {
      const uint64_t adopted = AdoptShared(j, j.cur_order, Region::kCur, j.free);
      j.free -= adopted;
      pool_ += adopted;
    }
    if (j.state == JobState::kCaching && j.LastEpoch()) {  // step 4
      j.state = JobState::kLastEpoch;
      pool_ += j.free;
      j.free = 0;
      LeaveList(j);
    }
    if (j.state == JobState::kLastEpoch) {
      j.next_order = nullptr;
      j.counters.clear();
    }
  }

  // Orders before the current epoch go, except the one the tail still needs.
  void DropOldOrders(Job& j) {
    for (auto it = j.orders.begin(); it != j.orders.end();) {
      if (it->first >= j.epoch || (j.prev_order != nullptr && &it->second == j.prev_order)) {
        ++it;
      } else {
        it = j.orders.erase(it);
      }
    }
  }

  void ReleaseTail(Job& j) {
    ReleaseRegion(j, Region::kTail);
    j.prev_order = nullptr;
    DropOldOrders(j);
  }

  void MoveRegion(Job& j, Region from, Region to) {
    const int f = static_cast<int>(from);
    const int t = static_cast<int>(to);
    assert(j.lists[t].empty());
    for (uint32_t x : j.lists[f]) j.where[x] = static_cast<uint8_t>(to);
    j.lists[t].swap(j.lists[f]);
    j.bytes[t] = j.bytes[f];
    j.bytes[f] = 0;
  }

  void ReleaseRegion(Job& j, Region r) {
    std::vector<uint32_t>& list = j.lists[static_cast<int>(r)];
    while (!list.empty()) pool_ += Unhold(j, list.back());
  }

  // Everything the job holds or was granted goes back to the pool.
  void ReleaseAll(Job& j) {
    ReleaseRegion(j, Region::kCur);
    ReleaseRegion(j, Region::kNext);
    ReleaseRegion(j, Region::kTail);
    pool_ += j.free;
    j.free = 0;
    j.prev_order = nullptr;
    j.next_order = nullptr;
    j.counters.clear();
  }

  // Removes sample x from its region; returns the bytes it was charged (the
  // caller decides where they go). A `next` sample decrements its counter.
  uint64_t Unhold(Job& j, uint32_t x) {
    const int r = j.where[x];
    assert(r != static_cast<int>(Region::kNone));
    std::vector<uint32_t>& list = j.lists[r];
    const uint32_t s = j.slot[x];
    const uint32_t last = list.back();
    list[s] = last;
    j.slot[last] = s;
    list.pop_back();
    j.where[x] = static_cast<uint8_t>(Region::kNone);
    if (r == static_cast<int>(Region::kNext) && j.next_order != nullptr) {
      uint32_t& c = j.counters[j.next_order->PosOf(x) / j.spec.batch_size];
      assert(c > 0);
      --c;
    }
    const ObjectId id = j.samples[x].object;
    j.held.erase(id);
    Obj& o = objects_.at(id);
    j.bytes[r] -= o.size;
    if (--o.refs == 0) pending_.push_back(id);
    return o.size;
  }

  // S34–S37 for sample x of job j, read now.
  void TryAdmit(Job& j, uint32_t x, const Access& a, bool hit, Decision* d) {
    if (j.next_order == nullptr || j.where[x] != static_cast<uint8_t>(Region::kNone)) return;
    const int32_t pos = j.next_order->PosOf(x);  // S34
    if (pos == kAbsent) return;
    const ObjectId id = j.samples[x].object;
    if (j.held.count(id) != 0) return;  // another sample of this job is the same file
    auto oit = objects_.find(id);
    const bool resident = oit != objects_.end();
    if (!resident && hit) return;  // the store has it but we never admitted it: leave it
    const uint64_t s = resident ? oit->second.size : a.size;
    uint32_t& c = j.counters[pos / j.spec.batch_size];
    if (c >= j.e) return;  // S35/S36: the batch has its e_i samples
    // A shared object is adopted: its bytes go back to the pool, from which
    // the job is charged like any admission (so the grant cannot evict it).
    const bool adopt = resident && oit->second.shared;
    if (adopt) Unshare(oit->second);
    if (j.free < s) {
      // The pool as the jobs see it: the truly free bytes plus the shared
      // region, which every grant reclaims (LRU first) as needed.
      const uint64_t avail = pool_ + shared_;
      if (j.free + avail >= s) {  // S35: ask the pool, granted by gain
        const uint64_t ask = s - j.free;
        uint64_t grant = std::max<uint64_t>(
            ask, static_cast<uint64_t>(j.lambda * static_cast<double>(ask)));
        grant = std::min(grant, avail);
        TakeFromPool(grant);
        j.free += grant;
      } else if (!TakeFromPrevious(j, s - j.free)) {  // S37
        if (adopt) Reshare(id, oit->second);  // nothing changed: pool_ >= s
        return;
      }
    }
    // The sample enters `next`.
    j.free -= s;
    Hold(j, x, Region::kNext, s);
    ++c;
    if (!resident) {
      objects_.emplace(id, Obj{s, 1});
      resident_ += s;
      d->admit = !hit;
    } else {
      ++oit->second.refs;
    }
  }

  // S37: the job before j in the sorted list hands over `need` bytes: its free
  // quota first, then random samples of its `next`. All or nothing.
  bool TakeFromPrevious(Job& j, uint64_t need) {
    if (j.rank <= 0) return false;  // first in the list: takes from no one
    Job& p = *list_[j.rank - 1];
    const int nx = static_cast<int>(Region::kNext);
    if (p.free + p.bytes[nx] < need) return false;
    const uint64_t from_free = std::min(p.free, need);
    p.free -= from_free;
    j.free += from_free;
    need -= from_free;
    while (need > 0) {
      const std::vector<uint32_t>& list = p.lists[nx];
      const uint32_t victim = list[Rand() % list.size()];
      const uint64_t got = Unhold(p, victim);  // decrements its batch counter
      j.free += got;
      need = got >= need ? 0 : need - got;
    }
    return true;
  }

  // The store lost `id`: every holder forgets it, its bytes go to the pool.
  void DropObject(ObjectId id) {
    auto oit = objects_.find(id);
    if (oit == objects_.end()) return;
    if (oit->second.shared) Unshare(oit->second);
    for (auto& [jid, jp] : jobs_) {
      auto h = jp->held.find(id);
      if (h != jp->held.end()) pool_ += Unhold(*jp, h->second);
    }
    resident_ -= oit->second.size;
    objects_.erase(oit);
    pending_.erase(std::remove(pending_.begin(), pending_.end(), id), pending_.end());
  }

  // Shared objects reclaimed by grants, and objects whose last holder let go
  // during this event, leave the store.
  void Flush(Decision* d) {
    d->evict.insert(d->evict.end(), reclaimed_.begin(), reclaimed_.end());
    reclaimed_.clear();
    for (ObjectId id : pending_) {
      auto it = objects_.find(id);
      if (it == objects_.end() || it->second.refs != 0 || it->second.shared) continue;
      d->evict.push_back(id);
      resident_ -= it->second.size;
      objects_.erase(it);
    }
    pending_.clear();
  }

  // O(jobs) accounting check after every event in debug builds.
  void DebugCheck() const {
#ifndef NDEBUG
    uint64_t sum = pool_ + shared_;
    for (const auto& [id, j] : jobs_) sum += j->Held() + j->free;
    assert(sum == params_.budget_bytes);
    assert(resident_ <= params_.budget_bytes);
#endif
  }

  EpochPolicyParams params_;
  uint64_t pool_;
  uint64_t resident_ = 0;  // distinct bytes held
  uint64_t rng_;
  std::unordered_map<JobId, std::unique_ptr<Job>> jobs_;
  std::vector<Job*> list_;  // jobs in kCaching, sorted by T ascending
  std::unordered_map<ObjectId, Obj> objects_;
  std::vector<ObjectId> pending_;  // refs fell to 0 during the current event
  uint64_t shared_ = 0;            // bytes of the shared region
  std::list<ObjectId> lru_;        // shared objects, least recently used first
  std::vector<ObjectId> reclaimed_;  // shared objects evicted during the current event
};

Status EpochPolicy::CheckInvariants() const {
  auto fail = [](const std::string& m) { return Internal("invariant: " + m); };
  uint64_t sum = pool_ + shared_;
  std::unordered_map<ObjectId, uint32_t> refs;
  for (const auto& [id, jp] : jobs_) {
    const Job& j = *jp;
    const std::string who = "job " + std::to_string(id) + ": ";
    sum += j.Held() + j.free;
    size_t holdings = 0;
    std::vector<uint32_t> counted(j.counters.size(), 0);
    for (int r = 1; r < kRegions; ++r) {
      uint64_t bytes = 0;
      for (size_t i = 0; i < j.lists[r].size(); ++i) {
        const uint32_t x = j.lists[r][i];
        if (j.where[x] != r || j.slot[x] != i) return fail(who + "region lists out of step");
        const ObjectId obj = j.samples[x].object;
        auto h = j.held.find(obj);
        if (h == j.held.end() || h->second != x) return fail(who + "held map out of step");
        auto o = objects_.find(obj);
        if (o == objects_.end()) return fail(who + "holds an unknown object");
        bytes += o->second.size;
        ++refs[obj];
        ++holdings;
        const Region reg = static_cast<Region>(r);
        if (reg == Region::kNext) {
          if (j.next_order == nullptr || j.next_order->PosOf(x) == kAbsent) {
            return fail(who + "sample " + std::to_string(x) + " in next is not in the next order");
          }
          ++counted[j.next_order->PosOf(x) / j.spec.batch_size];
        } else if (reg == Region::kCur && !j.InCur(x)) {
          return fail(who + "sample " + std::to_string(x) + " in cur is not in the current order");
        } else if (reg == Region::kTail && j.prev_order != nullptr &&
                   j.prev_order->PosOf(x) == kAbsent) {
          return fail(who + "sample " + std::to_string(x) +
                      " in tail is not in the previous order");
        }
      }
      if (bytes != j.bytes[r]) return fail(who + "region bytes out of step");
    }
    if (holdings != j.held.size()) return fail(who + "held map has extra entries");
    if (counted != j.counters) return fail(who + "batch counters differ from next region");
    for (uint32_t c : j.counters) {
      if (c > j.e) return fail(who + "a batch counter exceeds e");
    }
    const uint64_t nxt = j.bytes[static_cast<int>(Region::kNext)];
    switch (j.state) {
      case JobState::kWarmup:
        if (j.Held() != 0 || j.free != 0) return fail(who + "holds bytes during warm-up");
        break;
      case JobState::kLastEpoch:
        if (nxt != 0 || j.free != 0) return fail(who + "admits in its last epoch");
        break;
      case JobState::kDone:
        if (j.Held() != 0 || j.free != 0) return fail(who + "holds bytes when done");
        break;
      case JobState::kCaching:
        break;
    }
    const bool listed = std::find(list_.begin(), list_.end(), &j) != list_.end();
    if (listed != (j.state == JobState::kCaching)) return fail(who + "sorted list membership");
    if (listed && list_[j.rank] != &j) return fail(who + "rank out of step");
  }
  if (sum != params_.budget_bytes) {
    return fail("pool + jobs = " + std::to_string(sum) + " != budget " +
                std::to_string(params_.budget_bytes));
  }
  uint64_t resident = 0;
  size_t shared_objects = 0;
  for (const auto& [obj, o] : objects_) {
    resident += o.size;
    if (o.shared) {
      if (o.refs != 0 || refs.count(obj) != 0) return fail("a shared object is held by a job");
      if (o.lru == lru_.end() || *o.lru != obj) return fail("shared object not in the LRU list");
      ++shared_objects;
      continue;
    }
    if (o.refs == 0 || refs[obj] != o.refs) return fail("object refs out of step");
  }
  if (refs.size() + shared_objects != objects_.size()) {
    return fail("held objects missing from the table");
  }
  uint64_t shared = 0;
  for (ObjectId id : lru_) {
    auto o = objects_.find(id);
    if (o == objects_.end() || !o->second.shared) return fail("LRU list names a non-shared object");
    shared += o->second.size;
  }
  if (lru_.size() != shared_objects) return fail("LRU list length out of step");
  if (shared != shared_) return fail("shared bytes out of step");
  if (!params_.share_idle && shared_ != 0) return fail("shared region used with share_idle off");
  if (resident != resident_) return fail("resident bytes out of step");
  if (resident_ > params_.budget_bytes) return fail("resident bytes exceed the budget");
  for (size_t i = 1; i < list_.size(); ++i) {
    if (list_[i - 1]->epoch_time_ns > list_[i]->epoch_time_ns) return fail("list not sorted");
  }
  return Status::Ok();
}

}  // namespace

std::unique_ptr<Policy> MakeEpochPolicy(const EpochPolicyParams& params) {
  return std::make_unique<EpochPolicy>(params);
}

}  // namespace epochfs::cache
