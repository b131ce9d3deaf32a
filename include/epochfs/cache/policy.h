// Policy: decides which dataset objects stay resident in the RAM store.
//
// A Policy is pure logic: no FUSE, no I/O, no clocks of its own (time comes in
// the events), deterministic for a given event sequence. The same code runs in
// the daemon, the unit tests and the simulator.
//
// The caller (the daemon's cache front, src/store/cache_front.cc; the
// simulator engine; the replay) reports one event per object access (a
// read-open of a dataset file) and applies the returned Decision to its store
// with ApplyDecision (decision_apply.h): first the evictions, then the
// admission. Policies are built by MakePolicy (policy_factory.h). Space is
// counted in bytes; an object is a whole file, or a block of a large one.
//
// The core every policy implements: the access events (OnHit, OnMiss,
// OnDropped) and the byte figures. Everything else has a default that does
// nothing. Optional parts live in small interfaces of their own that a caller
// asks for (nullptr: the policy has none): prefetching() (prefetching.h),
// read_order() (read_order.h) and epoch_regions() (epoch_policy.h). The job
// lifecycle, SetBudget, SetRequestBytes and Jobs() are still virtuals here,
// with defaults for the policies that ignore them.
//
// Thread safety: not thread-safe. The caller serialises every call.
//
// Contract the caller relies on, and that tests check for every policy:
//   - the bytes of objects the policy holds as resident never exceed budget();
//   - a Decision never evicts an object the policy did not hold, and never
//     admits an object it already holds; `admit` is only ever set by OnMiss
//     (and Prefetching::OnPrefetched).
//   - pool_bytes() + shared_bytes() + Σ over Jobs() of
//     (cur + next + tail + granted_unused) == budget() after every call, for
//     policies that track jobs (CheckInvariants() verifies it and more).
//
// Errors: the job-lifecycle calls return a Status (or Result) whose message is
// meant for the job's `status` file; a failed call changes nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs::cache {

class EpochRegions;  // epoch_policy.h
class Prefetching;   // prefetching.h
class ReadOrder;     // read_order.h
class TierPlacement;  // tier_placement.h

// Stable id of a dataset object for the life of a mount: a seeded 64-bit hash
// of the file's path relative to LOWER (store::ObjectIdOf; a block of a file
// read in blocks: store::BlockIdOf), not an inode number, so that it names the
// same file across lookups, renames of other files and remounts of the kernel's
// inode cache. The simulator numbers its objects (dataset << 32 | sample).
using ObjectId = uint64_t;

// Registered job; kNoJob marks an access that could not be attributed.
using JobId = uint32_t;
inline constexpr JobId kNoJob = 0;

// One access to one object, as seen by the daemon.
struct Access {
  ObjectId object = 0;
  uint64_t size = 0;     // bytes of the whole object
  JobId job = kNoJob;    // attributed job, or kNoJob
  int64_t sample = -1;   // index in the job's sample list, or -1 when unknown
  uint64_t now_ns = 0;   // monotonic time of the access
  // Not 0: `object` is a block of this file (a file too large to cache
  // whole, cached in blocks); `job` and `sample` are the file's. Policies
  // that know a future by file (the "future" policy) give the block the
  // file's; the others treat the block as an object of its own.
  ObjectId file = 0;
  // How long the reader waited for the bytes, from its request to their
  // arrival (a load from the store, its turn for a read slot, or a load in
  // flight it joined); 0 for a hit served at once. Policies that weigh a
  // hit by what it saves (the "future" policy) measure a job's loaders'
  // time in storage with it.
  uint64_t wait_ns = 0;
  // How a hit (OnHit) was served: from RAM at once, by joining a load in
  // flight (a prefetch's: the reader waited for LOWER), or by refilling an
  // object handed over to the kernel whose pages it lost (read from LOWER
  // again). The policy's decisions treat all three as hits; its counters
  // (EpochCounters) keep them apart. Misses: kAtOnce.
  enum class Served : uint8_t { kAtOnce, kJoined, kRefill };
  Served served = Served::kAtOnce;
};

// What the caller must do after an event, in this order: drop `evict` from the
// store, then (misses only) insert the loaded object when `admit`.
struct Decision {
  bool admit = false;
  std::vector<ObjectId> evict;
};

// Description of a registered job (control protocol, .epochfs/jobs/NAME/config).
struct JobSpec {
  JobId id = kNoJob;
  std::string name;
  uint32_t batch_size = 0;  // b_i, >= 1
  uint32_t epochs = 0;      // 0: unknown (the job never reaches a "last epoch")
  uint32_t loaders = 1;     // W_i, >= 1
  // Compute (augmentation + training) per batch when the job knows it; 0:
  // measured during warm-up (docs/policy.md gives the formula).
  uint64_t compute_ns_per_batch = 0;
};

// One entry of a job's sample list: the object behind sample k. size may be 0
// when unknown (the mean sample size then comes from the accesses).
struct SampleRef {
  ObjectId object = 0;
  uint64_t size = 0;
};

// An object worth loading ahead of its read (prefetch, Prefetching::PrefetchHints):
// not resident, read soon by job `job` as its sample `sample`.
struct PrefetchHint {
  ObjectId object = 0;
  uint64_t size = 0;
  JobId job = kNoJob;
  uint32_t sample = 0;
};

// Life of a job in the epoch policy.
//   kWarmup:    first epoch (or first warmup_batches batches): no caching, measuring;
//   kCaching:   in the sorted list, admitting into `next`;
//   kLastEpoch: no admission; `cur` drains back to the pool as it is hit;
//   kDone:      the last epoch was consumed; the job holds nothing.
enum class JobState : uint8_t { kWarmup, kCaching, kLastEpoch, kDone };
const char* JobStateName(JobState s);

struct EpochCounters {
  uint32_t epoch = 0;
  // Reads attributed to the job in that epoch, by how they were served:
  uint64_t hits = 0;       // OnHit served from RAM at once (Access::Served::kAtOnce)
  uint64_t misses = 0;     // OnMiss
  // Its reads' time waiting for LOWER in that epoch (Access::wait_ns of its
  // misses and of its hits that joined a load in flight), nanoseconds.
  uint64_t lower_wait_ns = 0;
  uint64_t coalesced = 0;  // OnHit that joined a load in flight (kJoined): waited for LOWER
  uint64_t refills = 0;    // OnHit that read a handed-over object again (kRefill)
  // hits + misses + coalesced + refills: every read heard of.
  uint64_t reads() const { return hits + misses + coalesced + refills; }
};
// Counts a hit `a` in `c` by how it was served.
inline void CountHit(const Access& a, EpochCounters* c) {
  switch (a.served) {
    case Access::Served::kAtOnce: ++c->hits; break;
    case Access::Served::kJoined: ++c->coalesced; break;
    case Access::Served::kRefill: ++c->refills; break;
  }
}
// Moves a hit counted in `c` as served at once to the refills, with the
// refill's wait (Policy::OnRefilled); nothing when `c` has no hit (the epoch
// changed between the two).
inline void CountRefillOfHit(const Access& a, EpochCounters* c) {
  if (c->hits == 0) return;
  --c->hits;
  ++c->refills;
  c->lower_wait_ns += a.wait_ns;
}

// Per-job figures for the `status` / `stats` JSON (built by control/).
// Times are nanoseconds; 0 means "not measured yet".
struct JobSnapshot {
  JobId id = kNoJob;
  std::string name;
  JobState state = JobState::kWarmup;
  bool started = false;        // false until the first epoch began
  uint32_t epoch = 0;          // current epoch
  uint32_t epochs = 0;         // of the whole run (JobSpec::epochs; 0: unknown)
  uint64_t batch = 0;          // batches consumed in the current epoch
  uint64_t epoch_samples = 0;  // length of the current epoch's order
  EpochCounters current;       // counters of `epoch`
  EpochCounters previous;      // counters of the epoch before (zeros if none)
  EpochCounters total;         // counters of every epoch so far (never reset;
                               // `epoch` unused): what metrics count as counters
  uint64_t cur_bytes = 0;
  uint64_t next_bytes = 0;
  uint64_t tail_bytes = 0;
  uint64_t granted_unused_bytes = 0;  // quota held but not filled yet
  uint64_t default_alloc_bytes = 0;   // C_i (equal share of the budget)
  uint64_t reserved_bytes = 0;        // taken from the pool at the end of warm-up
  uint64_t need_bytes = 0;            // e_i·⌈N_i/b_i⌉·mean sample size
  bool need_measured = false;         // need_bytes was estimated (warm-up over)
  uint64_t need_batches = 0;          // the batches per epoch need_bytes counts
  uint64_t need_sample_bytes = 0;     // the mean sample size need_bytes counts
  int32_t rank = -1;                  // position in the sorted list, -1 if not in it
  double lambda = 0.0;                // λ_i
  double h = 0.0;                     // h_i = b_i·C_i/N_i (samples per batch)
  uint32_t e = 0;                     // e_i (samples per batch it wants cached)
  uint64_t epoch_time_ns = 0;         // T_i
  uint64_t load_ns_per_sample = 0;    // t_s
  uint64_t compute_ns_per_batch = 0;  // measured or reported
  uint64_t mean_sample_bytes = 0;
  // What a hit saves the job, 0..1 (the future policy with cache.weigh_hits;
  // 1 otherwise): its loaders' share of time waiting for storage.
  double hit_worth = 1.0;
};

class Policy {
 public:
  virtual ~Policy() = default;

  virtual const char* name() const = 0;
  // Byte budget this policy was built with.
  virtual uint64_t budget() const = 0;
  // Bytes of the distinct objects the policy currently holds as resident.
  virtual uint64_t resident_bytes() const = 0;
  // Bytes of the budget not charged to any job (the global free pool).
  virtual uint64_t pool_bytes() const { return budget() - resident_bytes(); }
  // Bytes of the idle pool lent to objects no job holds (the epoch policy's
  // shared LRU region). Not in pool_bytes(): the truly free bytes are
  // pool_bytes(); what a job may be granted is pool_bytes() + shared_bytes().
  virtual uint64_t shared_bytes() const { return 0; }

  // `a.object` was resident in the store when accessed.
  virtual Decision OnHit(const Access& a) = 0;
  // `a.object` was not resident; it was loaded from lower storage in load_ns.
  virtual Decision OnMiss(const Access& a, uint64_t load_ns) = 0;
  // The store lost `id` outside the policy's decisions (invalidation after a
  // lower change, a refused insert, a checksum failure). The policy forgets it.
  virtual void OnDropped(ObjectId id) = 0;
  // A read told earlier as a hit served at once (OnHit, Access::Served::
  // kAtOnce: an open whose file the kernel held, one copy) needed its bytes
  // again (the kernel had lost pages of it: a refill from LOWER). `a` is
  // that read (its object, size, job and sample), `a.wait_ns` the refill's
  // wait. Nothing is decided, nothing moves in the store: policies that count
  // reads per job move this one from hits to refills (CountRefillOfHit).
  // The caller tells it at most once per read. Default: nothing.
  virtual void OnRefilled(const Access& /*a*/) {}

  // Optional parts, asked for cheaply; nullptr when the policy has none.
  // Each pointer lives as long as the policy.
  //   prefetching(): loads ahead of reads (prefetching.h; the future policy);
  //   read_order():  the order of readers' loads from LOWER (read_order.h;
  //                  the future policy);
  //   epoch_regions(): the epoch policy's regions (epoch_policy.h).
  virtual Prefetching* prefetching() { return nullptr; }
  virtual const ReadOrder* read_order() const { return nullptr; }
  virtual const EpochRegions* epoch_regions() const { return nullptr; }
  // The policy's own placement on the disk tier (tier_placement.h; the
  // future policy's FutureTier); nullptr: the caller uses MakeLruTier.
  virtual TierPlacement* tier_placement() { return nullptr; }

  // Job lifecycle. Job-blind policies (LRU) accept and ignore these.
  // AddJob: InvalidArgument for id kNoJob or batch_size 0; Exists if the id is taken.
  virtual Status AddJob(const JobSpec& /*spec*/) { return Status::Ok(); }
  // The sample list; fixed once the job has an order (then Busy).
  virtual Status SetSamples(JobId /*job*/, std::vector<SampleRef> /*samples*/) {
    return Status::Ok();
  }
  // Declares epoch `epoch`'s order: a permutation of a subset of the indices
  // into the sample list. May be declared ahead (K+1 during K). InvalidArgument
  // for an index out of range, a duplicate, a past epoch, an epoch >= epochs,
  // or an order in use being replaced; nothing changes then.
  virtual Status SetOrder(JobId /*job*/, uint32_t /*epoch*/, std::vector<uint32_t> /*order*/) {
    return Status::Ok();
  }
  // The job starts epoch `epoch` now (explicit marker or inferred by control/).
  // Beginning the current epoch again is a no-op; going back is InvalidArgument.
  virtual Result<Decision> BeginEpoch(JobId /*job*/, uint32_t /*epoch*/, uint64_t /*now_ns*/) {
    return Decision{};
  }
  // The job reports that it has handed out the first `position` samples of
  // epoch `epoch`'s declared order (the `position` control file; the control
  // layer has checked the epoch is the job's current one and the position
  // within its order). For a mount whose hits never reach the policy
  // (fuse.no_open): the future policy counts the reads the job must have
  // made by then (FuturePolicyParams::implied_reads). Other policies, and
  // the future policy on a mount that sees every read, ignore it.
  virtual Decision Progress(JobId /*job*/, uint32_t /*epoch*/, uint64_t /*position*/,
                            uint64_t /*now_ns*/) {
    return {};
  }
  // The job's processes died and a restarted job re-attached (control/): it
  // reads its current epoch again from the start. What it consumed of the
  // epoch is forgotten, so that re-reads count for this epoch and not the
  // next; everything it holds (cur, next, tail, quota), its measurements, its
  // place in the sorted list and its orders stay. Hit/miss counters keep
  // adding up for the epoch. A job that has not begun an epoch: no-op.
  // NotFound if unknown.
  virtual Status RestartEpoch(JobId /*job*/, uint64_t /*now_ns*/) { return Status::Ok(); }
  // The job ended (rmdir): everything it holds is released. NotFound if unknown.
  virtual Result<Decision> EndJob(JobId /*job*/) { return Decision{}; }

  // Changes the budget (the memory governor, cache.memory = "auto"). Growing
  // adds the difference to the free pool. Shrinking takes it from the free
  // pool, then evicts in the policy's own order of least value (the epoch
  // policy: docs/policy.md "Budget changes"); the Decision lists the objects
  // to drop. Afterwards resident_bytes() <= budget() == bytes and the budget
  // equation holds. Unsupported for a policy that cannot resize (nothing
  // changes then).
  virtual Result<Decision> SetBudget(uint64_t /*bytes*/) {
    return Status(Code::kUnsupported, std::string(name()) + " policy cannot change its budget");
  }
  // What one store request costs beyond its bytes, in bytes of transfer, as
  // measured now (cache.request_bytes = "auto", RequestCost). Policies that
  // weigh sizes by it (the future policy) do so from the next decision on;
  // nothing is evicted by the call itself. Others ignore it.
  virtual void SetRequestBytes(uint64_t /*bytes*/) {}

  // ReadOrder::BytesLeft of a job whose epochs are unknown (read_order.h).
  static constexpr uint64_t kNoLeft = UINT64_MAX;
  // Introspection (status files, tests, simulator).
  virtual std::vector<JobSnapshot> Jobs() const { return {}; }
  // Recomputes every account from scratch and compares (O(resident objects));
  // Internal with a description on the first violation.
  virtual Status CheckInvariants() const { return Status::Ok(); }
};

// Expected time until the job's last epoch ends, for the memory governor's
// horizon: (epochs − epoch) × T_i, the current epoch counted whole. 0 when it
// cannot be known (epochs unknown, T_i not measured yet) or the job is done.
uint64_t ExpectedRemainingNs(const JobSnapshot& s);

// Least-recently-used over all accesses, job-blind: admit every miss that fits
// the budget, evicting the least recently accessed objects first. Objects
// larger than the budget are never admitted.
std::unique_ptr<Policy> MakeLruPolicy(uint64_t budget_bytes);

}  // namespace epochfs::cache
