// The simulator's engine inside: the state of one run (jobs, workers, the
// model store, the loads in flight, the event queue) and the class that
// drives it. Private to src/sim: Run (epochfs/sim/engine.h) is the face; the
// model it implements is stated there. It includes what it needs below that
// face (the run's result: run_result.h), never engine.h itself.
//
// The class is one run's state; its methods live by concept:
//   engine.cc          construction, the event loop, the future it shows
//                      Belady (cache::Future), the policy, the final counts
//   engine_readers.cc  a job's epochs, its loader workers, its computes
//   engine_loads.cc    the store model (channels, link, capacity), readers'
//                      loads and read slots, prefetch
// Ownership: an Engine borrows the Trace (it must outlive the run) and owns
// everything else: the policy, the disk model, the jobs.
// Thread safety: none; one thread runs one Engine. Runs share only the const
// Trace.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "epochfs/cache/decision_apply.h"
#include "epochfs/cache/future.h"
#include "epochfs/cache/policy.h"
#include "epochfs/cache/prefetching.h"
#include "epochfs/cache/request_cost.h"
#include "epochfs/common/policy_kind.h"
#include "epochfs/common/status.h"
#include "epochfs/sim/disk_model.h"
#include "epochfs/sim/run_result.h"
#include "epochfs/sim/trace.h"
#include "epochfs/sim/workload.h"

namespace epochfs::sim::engine_impl {

constexpr uint64_t kUnset = ~uint64_t{0};

enum class Ev : uint8_t { kJobStart, kLoadDone, kComputeDone, kPrefetchDone };

struct Event {
  uint64_t t;
  uint64_t seq;
  Ev type;
  bool streamed;
  uint32_t job;
  uint32_t worker;
  uint32_t sample;
  uint64_t issued;  // kLoadDone: when the request was issued
  uint64_t key = 0;  // kLoadDone: its read slot's key (workload read_slots)
  uint64_t started = 0;  // kLoadDone, kPrefetchDone: when the store began it
  uint32_t others = 0;   // kLoadDone, kPrefetchDone: the loads at the store then
  bool disk = false;     // kLoadDone, kPrefetchDone: a read from the disk tier, not the store
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Worker {
  uint32_t batch = 0;
  uint32_t next = 0;  // index within the batch of the sample being loaded
  uint64_t asked = 0;  // when it began waiting for a load in flight
};

struct Job {
  const JobSpecW* spec = nullptr;
  uint32_t index = 0;
  cache::JobId id = cache::kNoJob;
  size_t dataset = 0;
  uint32_t n = 0;    // samples in the dataset
  uint32_t len = 0;  // reads per epoch: n, or the rank's shard
  uint32_t b = 0, w = 0, epochs = 0, batches = 0;
  uint64_t compute_ns = 0, start_ns = 0;
  double pace_ns = 1;  // Belady's estimate of the time per access

  bool started = false, done = false;
  uint32_t epoch = 0;
  std::vector<uint32_t> order, next_order;
  std::vector<uint32_t> pos_cur, pos_next;  // inverse permutations (for the Future); kOut
  std::vector<uint32_t> issued;             // per sample: 1 + epoch of its last issued read

  std::vector<uint64_t> ready_ns;  // per batch of the current epoch; kUnset until loaded
  uint32_t next_assign = 0;        // next batch to hand to a worker
  uint32_t next_compute = 0;       // next batch to compute (= batches gone to compute)
  bool computing = false;
  uint64_t free_since = 0;  // compute idle since (previous end or epoch start)
  std::vector<Worker> workers;
  std::vector<uint32_t> idle;  // idle workers (stack)
  std::vector<uint32_t> peers;  // the ranks of its distributed run, itself included; or empty
  JobResult r;
};

constexpr uint32_t kOut = UINT32_MAX;  // not in the order (another rank's shard)

inline std::vector<uint32_t> Inverse(const std::vector<uint32_t>& order, uint32_t n) {
  std::vector<uint32_t> pos(n, kOut);
  for (uint32_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  return pos;
}

class Engine final : public cache::Future {
 public:
  // check_every: EngineOptions::check_every (engine.h).
  Engine(const Trace& trace, PolicyKind kind, uint64_t check_every);

  // Runs the trace to its end (or the first failure): the run's result.
  Result<RunResult> Go();

  // cache::Future, for Belady: each object's next use by a job still
  // running, and each job's line (engine.cc).
  size_t Slots() const override { return slots_; }
  size_t Slot(cache::ObjectId object) const override {
    return slot_base_[static_cast<size_t>((object >> 32) - 1)] + (object & 0xffffffffu);
  }
  bool NextUse(cache::ObjectId object, Use* out) const override;
  size_t Jobs() const override { return jobs_.size(); }
  Line LineOf(uint32_t job, uint64_t now) const override;

 private:
  class StoreTarget;

  // engine.cc: the policy and the disk model; an event queued (events at
  // equal times run in the order pushed); the first failure, which ends the
  // run; the run's counts at its end.
  Status MakePolicy();
  void Push(Event e);
  void Fail(const Status& s, const std::string& what);
  RunResult Collect();

  // An object's state in the model store (kAbsent, kResident, kInFlight), and
  // its size.
  uint8_t& State(cache::ObjectId id) {
    return state_[static_cast<size_t>((id >> 32) - 1)][id & 0xffffffffu];
  }
  uint64_t SizeOf(cache::ObjectId id) const {
    return trace_.datasets()[static_cast<size_t>((id >> 32) - 1)].sizes[id & 0xffffffffu];
  }

  // engine_readers.cc: a job's epochs, its workers, its computes.
  void StartEpoch(Job& j, uint32_t epoch, uint64_t now);
  void Assign(Job& j, uint64_t now);
  void Step(Job& j, uint32_t w, uint64_t now);
  static bool Ready(const Job& j);
  void TryCompute(Job& j, uint64_t now);
  void StartCompute(Job& j, uint64_t now);
  void ComputeDone(Job& j, uint64_t now);

  // engine_loads.cc: storage requests, decisions applied to the store,
  // readers' loads (and read slots), prefetch.
  uint64_t Request(uint64_t now, uint64_t size);
  void Apply(const cache::Decision& d, cache::ObjectId loaded);
  void ApplyResult(const Result<cache::Decision>& d, const char* what);
  void Loaded(uint64_t bytes, uint64_t start, uint64_t end, uint32_t others);
  void IssueDemand(uint32_t job, uint32_t w, uint32_t s, bool streamed, uint64_t asked,
                   uint64_t now, uint64_t key = 0);
  uint64_t KeyOf(const Job& j) const;
  void IssueWaiting(uint64_t now);
  void LoadDone(const Event& e);
  void PrefetchMore(uint64_t now);
  void PrefetchDone(const Event& e);


  static constexpr uint8_t kAbsent = 0, kResident = 1, kInFlight = 2;

  const Trace& trace_;
  const PolicyKind kind_;
  const uint64_t check_every_;
  const uint64_t budget_;
  uint64_t max_object_ = 0;
  uint64_t latency_ns_ = 0;
  uint64_t iops_gap_ns_ = 0;
  uint64_t iops_next_ = 0;
  uint64_t link_free_ = 0;
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> channels_;

  std::unique_ptr<cache::Policy> policy_;
  std::unique_ptr<cache::RequestCost> request_cost_;  // request_bytes = "auto"
  std::unique_ptr<DiskModel> disk_;                    // the disk tier (disabled without one)
  std::vector<Job> jobs_;
  std::vector<std::vector<uint32_t>> by_dataset_;
  std::vector<std::vector<uint8_t>> state_;  // per dataset, per sample
  std::unordered_map<cache::ObjectId, std::vector<std::pair<uint32_t, uint32_t>>> waiters_;
  uint64_t used_ = 0, max_resident_ = 0;
  uint64_t admissions_ = 0, evictions_ = 0, refused_ = 0;
  // Prefetch.
  uint32_t prefetch_limit_ = 0;  // min(workload prefetch, storage concurrency)
  uint32_t prefetch_inflight_ = 0, demand_inflight_ = 0;
  std::unordered_set<cache::ObjectId> prefetching_, unread_prefetched_, declined_;
  std::vector<cache::PrefetchHint> loading_;  // the prefetches in flight, in the order they began
  uint64_t declined_until_ = 0;
  uint64_t prefetched_ = 0, prefetch_hits_ = 0, prefetch_wasted_ = 0, prefetch_bytes_ = 0;

  struct Waiting {
    uint32_t job, worker, sample;
    uint64_t asked;
    bool streamed;
  };
  std::vector<Waiting> waiting_;  // readers' requests waiting for a read slot
  std::multiset<std::pair<uint64_t, uint32_t>> held_;  // readers' requests in flight: (key, job)

  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  uint64_t seq_ = 0;
  uint64_t events_ = 0;
  uint64_t now_ = 0;               // time of the event being processed
  std::vector<size_t> slot_base_;  // per dataset: its first Future::Slot
  size_t slots_ = 0;
  Status status_;
};


}  // namespace epochfs::sim::engine_impl
