// EpochPolicy, the multi-job epoch policy of seed 000 (patent CN114968588A):
// its state and the one class whose member functions the epoch_*.cc rooms
// define, one concept per room. docs/policy.md is the prose version of these
// files; keep them in step. Private to src/cache (the public face is
// include/epochfs/cache/epoch_policy.h).
//
// Rooms:
//   epoch_policy.cc      the Policy calls: declarations, accesses, budget
//   epoch_lifecycle.cc   epochs, warm-up measurement, the tail, the last epoch
//   epoch_gains.cc       the sorted list, λ gains, admission and grants (S34–S37)
//   epoch_shared.cc      the shared LRU region and adoption from it
//   epoch_accounting.cc  holding and releasing bytes, drops, flush, shrink
//   epoch_snapshot.cc    introspection: Jobs(), Where(), NextCounters()
//   epoch_invariants.cc  CheckInvariants: every account recomputed
//
// Thread safety: not thread-safe, like every Policy.
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
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "epochfs/cache/epoch_policy.h"
#include "epochfs/cache/policy.h"
#include "epochfs/declarations/declaration_rules.h"
#include "epochfs/declarations/declared_orders.h"

namespace epochfs::cache::epoch_impl {

using declarations::kAbsent;
constexpr int kRegions = 4;  // indexed by Region; kNone unused

// An epoch's order: a permutation of a subset of the sample indices.
using declarations::Order;

struct Job {
  JobSpec spec;
  std::vector<SampleRef> samples;
  uint64_t known_size_sum = 0;  // over samples with size > 0
  uint64_t known_size_n = 0;
  uint64_t access_size_sum = 0;  // fallback when the list has no sizes
  uint64_t access_size_n = 0;
  declarations::DeclaredOrders orders{declarations::InUse::kCurrentAndNext};  // by epoch

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
  EpochCounters total_stats;  // every epoch's, never reset

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

inline uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

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
  void OnRefilled(const Access& a) override;
  Decision OnMiss(const Access& a, uint64_t load_ns) override {
    return OnAccess(a, /*hit=*/false, load_ns);
  }

  void OnDropped(ObjectId id) override;
  Status AddJob(const JobSpec& spec) override;
  Status SetSamples(JobId id, std::vector<SampleRef> samples) override;
  Status SetOrder(JobId id, uint32_t epoch, std::vector<uint32_t> order) override;
  Result<Decision> BeginEpoch(JobId id, uint32_t epoch, uint64_t now_ns) override;
  Status RestartEpoch(JobId id, uint64_t now_ns) override;
  Result<Decision> EndJob(JobId id) override;

  // Growing adds to the pool. Shrinking frees `old − bytes` in this order,
  // least valuable first (docs/policy.md, "Budget changes"): the truly free
  // pool; the shared region (LRU first); quota granted but not filled; the
  // tails (late reads only); `next` regions, jobs in the order S37 takes
  // space (head of the sorted list first), random victims as in S37; `cur`
  // regions, the sample read last in the current order first.
  Result<Decision> SetBudget(uint64_t bytes) override;
  std::vector<JobSnapshot> Jobs() const override;

  const EpochRegions* epoch_regions() const override { return this; }

  Region Where(JobId id, uint32_t sample) const override;
  std::vector<uint32_t> NextCounters(JobId id) const override;
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
  uint64_t DefaultShare() const;

  // h_i = b_i·C_i/N_i with C_i in samples (bytes / mean sample size), ≤ b_i.
  static double H(const Job& j, uint64_t share);

  uint32_t TailBatches(const Job& j) const {
    return params_.tail_batches != 0 ? params_.tail_batches : 2 * j.spec.loaders;
  }

  // The sample an access refers to, or -1: the index must match the sample
  // list; otherwise the object is looked up among the job's holdings.
  static int64_t ResolveSample(const Job& j, const Access& a);
  Decision OnAccess(const Access& a, bool hit, uint64_t load_ns);

  // Returns whether the job claims the read (then only the job's rules apply):
  // it is caching or in its last epoch and the object is one of its samples.
  bool Serve(Job& j, const Access& a, bool hit, uint64_t load_ns, Decision* d);

  // An unclaimed miss enters the shared region (most recently used) when it
  // fits in the idle bytes (pool + shared), evicting least recently used
  // shared objects as needed. Empty files are not worth an entry.
  void AdmitShared(const Access& a, uint64_t load_ns, Decision* d);

  // Takes `n` bytes out of the pool for a job, evicting shared objects (least
  // recently used first) while the truly free bytes do not cover it. The
  // caller has checked n <= pool_ + shared_.
  void TakeFromPool(uint64_t n);

  // The least recently used shared object leaves; its bytes go to the pool.
  void ReclaimOneShared();

  // SetBudget's shrink: moves bytes into the pool until pool_ >= need (always
  // possible: everything returned, the pool is the old budget).
  void FreeForShrink(uint64_t need);

  // A shared object leaves (or re-enters, at the most recent end) the shared
  // region, its bytes going to (coming from) the truly free pool.
  void Unshare(Obj& o);
  void Reshare(ObjectId id, Obj& o);

  // Batch boundaries, warm-up end, tail release, last-epoch end.
  void Progress(Job& j, uint64_t now);

  // Step 1 ends: T, t_s, compute, e_i; join the sorted list; reserve (S31).
  // `ended`: the warm-up epoch is over (the next one began), so its length is
  // what was read; otherwise the epoch is either complete or, after
  // warmup_batches batches, extrapolated to its full length.
  void FinishWarmup(Job& j, uint64_t now, bool ended);

  // Moves shared objects of the samples of `order` (nullptr: every sample), in
  // order, into region r of job j, each charged to the job, while their sizes
  // fit in `limit` bytes; `next` respects the batch counters (S36). The bytes
  // go from the shared region straight to the job: the pool does not change.
  // Returns the bytes adopted. Nothing happens without shared objects, so a
  // policy with share_idle = false decides exactly as before.
  uint64_t AdoptShared(Job& j, const Order* order, Region r, uint64_t limit);

  // The current epoch ran without an order (every sample) and now has one:
  // what `cur` holds outside it goes back to the shared region (an implicit
  // `cur` fills only by adopting shared objects), and only reads of samples
  // in the order count as consumed, so the epoch neither keeps samples it will
  // not read nor ends before its order is read. O(N + cur).
  void NarrowCur(Job& j);

  // Sample x (not held) enters region r with s bytes.
  void Hold(Job& j, uint32_t x, Region r, uint64_t s);

  // Jobs sorted by T ascending (ties by id); λ by rank (step 1).
  void SortList();
  void LeaveList(Job& j);

  void ResetCounters(Job& j) {
    j.counters.assign(j.next_order ? CeilDiv(j.next_order->size(), j.spec.batch_size) : 0, 0);
  }

  void StartEpoch(Job& j, uint32_t epoch, uint64_t now);

  // Orders before the current epoch go, except the one the tail still needs.
  void DropOldOrders(Job& j);
  void ReleaseTail(Job& j);
  void MoveRegion(Job& j, Region from, Region to);
  void ReleaseRegion(Job& j, Region r);

  // Everything the job holds or was granted goes back to the pool.
  void ReleaseAll(Job& j);

  // Removes sample x from its region; returns the bytes it was charged (the
  // caller decides where they go). A `next` sample decrements its counter.
  uint64_t Unhold(Job& j, uint32_t x);

  // S34–S37 for sample x of job j, read now.
  void TryAdmit(Job& j, uint32_t x, const Access& a, bool hit, Decision* d);

  // S37: the job before j in the sorted list hands over `need` bytes: its free
  // quota first, then random samples of its `next`. All or nothing.
  bool TakeFromPrevious(Job& j, uint64_t need);

  // The store lost `id`: every holder forgets it, its bytes go to the pool.
  void DropObject(ObjectId id);

  // Shared objects reclaimed by grants, and objects whose last holder let go
  // during this event, leave the store.
  void Flush(Decision* d);

  // O(jobs) accounting check after every event in debug builds.
  void DebugCheck() const;

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

}  // namespace epochfs::cache::epoch_impl
