#include "epochfs/sim/engine.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "epochfs/cache/decision_apply.h"
#include "epochfs/cache/future.h"
#include "epochfs/cache/policy_factory.h"
#include "epochfs/cache/prefetching.h"
#include "epochfs/cache/read_order.h"
#include "epochfs/cache/request_cost.h"
#include "epochfs/sim/disk_model.h"

namespace epochfs::sim {

namespace {

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

std::vector<uint32_t> Inverse(const std::vector<uint32_t>& order, uint32_t n) {
  std::vector<uint32_t> pos(n, kOut);
  for (uint32_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  return pos;
}

class Engine final : public cache::Future {
 public:
  Engine(const Trace& trace, PolicyKind kind, const EngineOptions& opt)
      : trace_(trace), kind_(kind), opt_(opt), budget_(trace.budget()) {
    max_object_ = std::min<uint64_t>(budget_ / 4, uint64_t{1} << 30);
    const Workload& wl = trace.workload();
    const StorageSpec& st = wl.storage;
    latency_ns_ = static_cast<uint64_t>(st.latency_ms * 1e6);
    iops_gap_ns_ = st.iops > 0 ? static_cast<uint64_t>(1e9 / st.iops) : 0;
    for (uint32_t c = 0; c < st.concurrency; ++c) channels_.push(0);
    prefetch_limit_ = std::min(wl.prefetch, st.concurrency);
    for (const Dataset& d : trace.datasets()) state_.emplace_back(d.sizes.size(), 0);
    by_dataset_.resize(trace.datasets().size());
    for (const Dataset& d : trace.datasets()) {
      slot_base_.push_back(slots_);
      slots_ += d.sizes.size();
    }
    const double distinct = double(std::max<uint64_t>(trace.distinct_bytes(), 1));
    const double cached = std::min(1.0, double(budget_) / distinct);
    // The share Belady (the only user of pace_ns) reads from its disk tier,
    // beyond RAM's: its tiers are exclusive (disk_model.h).
    const double on_disk =
        std::min(1.0, double(budget_ + trace.disk_budget()) / distinct) - cached;
    for (uint32_t j = 0; j < wl.jobs.size(); ++j) {
      const JobSpecW& s = wl.jobs[j];
      Job job;
      job.spec = &s;
      job.index = j;
      job.id = j + 1;
      job.dataset = trace.dataset_of(j);
      job.n = s.samples;
      job.b = s.batch_size;
      job.w = s.loaders;
      job.epochs = s.epochs;
      job.compute_ns = static_cast<uint64_t>(s.compute_ms * 1e6);
      job.start_ns = static_cast<uint64_t>(s.start_s * 1e9);
      job.order = trace.Order(j, 0);
      job.len = static_cast<uint32_t>(job.order.size());  // the same in every epoch
      job.batches = (job.len + s.batch_size - 1) / s.batch_size;
      job.pos_cur = Inverse(job.order, job.n);
      if (job.epochs > 1) {
        job.next_order = trace.Order(j, 1);
        job.pos_next = Inverse(job.next_order, job.n);
      }
      job.issued.assign(job.n, 0);
      job.workers.resize(job.w);
      job.r.name = s.name;
      job.r.start_ns = job.start_ns;
      // Pace for Belady's estimates: compute-bound, or storage-bound on the
      // share of the data the budget cannot hold, whichever is slower.
      const double mean = double(trace.datasets()[job.dataset].total_bytes) / double(job.n);
      const double xfer = mean / st.bandwidth * 1e9;
      double io =
          std::max((double(latency_ns_) + xfer) / std::min<double>(job.w, st.concurrency), xfer);
      io = std::max(io, double(iops_gap_ns_));
      const double disk_io = wl.disk.enabled() ? wl.disk.latency_ms * 1e6 / job.w +
                                                     mean / wl.disk.bandwidth * 1e9
                                               : 0.0;
      job.pace_ns = std::max({double(job.compute_ns) / job.b,
                              (1.0 - cached - on_disk) * io + on_disk * disk_io, 1.0});
      by_dataset_[job.dataset].push_back(j);
      jobs_.push_back(std::move(job));
    }
    std::map<std::string, std::vector<uint32_t>> runs;
    for (const Job& j : jobs_) {
      if (j.spec->ranks > 1) runs[j.spec->run].push_back(j.index);
    }
    for (auto& [name, ranks] : runs) {
      for (uint32_t r : ranks) jobs_[r].peers = ranks;
    }
  }

  Result<RunResult> Go() {
    if (Status s = MakePolicy(); !s.ok()) return s;
    for (Job& j : jobs_) Push({j.start_ns, 0, Ev::kJobStart, false, j.index, 0, 0, 0});
    while (!queue_.empty() && status_.ok()) {
      const Event e = queue_.top();
      queue_.pop();
      now_ = e.t;
      ++events_;
      switch (e.type) {
        case Ev::kJobStart:
          StartEpoch(jobs_[e.job], 0, e.t);
          break;
        case Ev::kLoadDone:
          LoadDone(e);
          break;
        case Ev::kComputeDone:
          ComputeDone(jobs_[e.job], e.t);
          break;
        case Ev::kPrefetchDone:
          PrefetchDone(e);
          break;
      }
      if (prefetch_limit_ != 0) PrefetchMore(now_);
      if (opt_.check_every != 0 && events_ % opt_.check_every == 0) {
        if (Status s = policy_->CheckInvariants(); !s.ok()) return s;
      }
      disk_->Drain();
    }
    if (!status_.ok()) return status_;
    if (Status s = policy_->CheckInvariants(); !s.ok()) return s;
    return Collect();
  }

  size_t Slots() const override { return slots_; }
  size_t Slot(cache::ObjectId object) const override {
    return slot_base_[static_cast<size_t>((object >> 32) - 1)] + (object & 0xffffffffu);
  }

  bool NextUse(cache::ObjectId object, Use* out) const override {
    const size_t d = static_cast<size_t>((object >> 32) - 1);
    const auto s = static_cast<uint32_t>(object & 0xffffffffu);
    bool found = false;
    uint64_t best = 0;
    for (uint32_t ji : by_dataset_[d]) {
      const Job& j = jobs_[ji];
      if (j.done) continue;
      Use u{ji, 0};
      if (j.issued[s] != j.epoch + 1 && j.pos_cur[s] != kOut) {
        u.pos = uint64_t{j.epoch} * j.len + j.pos_cur[s];
      } else if (j.epoch + 1 < j.epochs && j.pos_next[s] != kOut) {
        u.pos = uint64_t{j.epoch + 1} * j.len + j.pos_next[s];
      } else {
        continue;
      }
      const uint64_t when = Estimate(u, now_);
      if (!found || when < best) {
        found = true;
        best = when;
        *out = u;
      }
    }
    return found;
  }

  size_t Jobs() const override { return jobs_.size(); }

  // The job's position is its reads issued so far; its pace the time per read
  // so far (before it has read a few batches: the static estimate pace_ns).
  Line LineOf(uint32_t job, uint64_t now) const override {
    const Job& j = jobs_[job];
    Line l;
    l.floor = now;
    if (!j.started) {
      l.origin = j.start_ns;
      l.pace = j.pace_ns;
      return l;
    }
    l.origin = now;
    l.done = j.r.accesses;
    l.pace = j.pace_ns;
    if (l.done >= uint64_t{j.b} * j.w && now > j.start_ns) {
      l.pace = double(now - j.start_ns) / double(l.done);
    }
    return l;
  }

 private:
  Status MakePolicy() {
    const Workload& wl = trace_.workload();
    cache::PolicyParams p;
    p.kind = kind_;
    p.budget_bytes = budget_;
    p.future.request_bytes = wl.request_bytes;
    p.future.order_jobs = wl.read_slots != 0;
    p.future.weigh_hits = wl.weigh_hits;
    p.epoch.gain_max = wl.epoch.gain_max;
    p.epoch.warmup_batches = wl.epoch.warmup_batches;
    p.epoch.share_idle = wl.epoch.share_idle;
    p.epoch.seed = wl.seed;
    p.oracle = this;
    auto made = cache::MakePolicy(p);
    if (!made.ok()) return made.status();
    policy_ = std::move(made).value();
    // Belady, the reference, keeps its tiers exclusive (disk_model.h).
    disk_ = std::make_unique<DiskModel>(wl.disk, trace_.disk_budget(), *policy_,
                                        kind_ == PolicyKind::kBelady);
    if (trace_.workload().request_bytes_auto) request_cost_ = std::make_unique<cache::RequestCost>();
    return Status::Ok();
  }

  // A load from the store, start to end: with request_bytes = "auto" the
  // policy hears each new estimate of a request's cost (as the daemon's
  // CacheFront::LoadedLocked).
  void Loaded(uint64_t bytes, uint64_t start, uint64_t end, uint32_t others) {
    if (request_cost_ != nullptr && request_cost_->OnLoad(bytes, start, end, others)) {
      policy_->SetRequestBytes(request_cost_->bytes());
    }
  }

  void Push(Event e) {
    e.seq = seq_++;
    queue_.push(e);
  }

  void Fail(const Status& s, const std::string& what) {
    if (status_.ok()) status_ = Internal(what + ": " + s.message());
  }

  uint8_t& State(cache::ObjectId id) {
    return state_[static_cast<size_t>((id >> 32) - 1)][id & 0xffffffffu];
  }
  uint64_t SizeOf(cache::ObjectId id) const {
    return trace_.datasets()[static_cast<size_t>((id >> 32) - 1)].sizes[id & 0xffffffffu];
  }

  // The model store as a DecisionTarget (cache/decision_apply.h).
  class StoreTarget final : public cache::DecisionTarget {
   public:
    explicit StoreTarget(Engine& e) : e_(e) {}
    bool Evict(cache::ObjectId v) override {
      uint8_t& st = e_.State(v);
      if (st != kResident) return false;
      st = kAbsent;
      e_.used_ -= e_.SizeOf(v);
      if (e_.unread_prefetched_.erase(v) != 0) ++e_.prefetch_wasted_;
      e_.disk_->LeftRam({v, e_.SizeOf(v), cache::kNoJob, -1, e_.now_});
      return true;
    }
    Admission Admit(cache::ObjectId loaded) override {
      uint8_t& st = e_.State(loaded);
      if (st == kResident) return Admission::kPresent;
      const uint64_t s = e_.SizeOf(loaded);
      if (e_.used_ + s > e_.budget_) return Admission::kRefused;
      st = kResident;
      e_.used_ += s;
      e_.max_resident_ = std::max(e_.max_resident_, e_.used_);
      e_.disk_->EnteredRam(loaded);
      return Admission::kAdmitted;
    }

   private:
    Engine& e_;
  };

  // Applies a Decision to the store: evictions, then the admission of `loaded`
  // (0: none).
  void Apply(const cache::Decision& d, cache::ObjectId loaded) {
    StoreTarget target(*this);
    const cache::Applied a = cache::ApplyDecision(
        d, loaded != 0 ? std::optional<cache::ObjectId>(loaded) : std::nullopt, *policy_, target);
    evictions_ += a.evicted;
    admissions_ += a.admitted ? 1 : 0;
    refused_ += a.refused ? 1 : 0;
  }
  void ApplyResult(const Result<cache::Decision>& d, const char* what) {
    if (!d.ok()) return Fail(d.status(), what);
    Apply(d.value(), 0);
  }

  // Completion time of a storage request of `size` bytes issued at `now`.
  uint64_t Request(uint64_t now, uint64_t size) {
    uint64_t start = std::max(now, channels_.top());
    channels_.pop();
    if (iops_gap_ns_ != 0) {
      start = std::max(start, iops_next_);
      iops_next_ = start + iops_gap_ns_;
    }
    const uint64_t xfer_start = std::max(start + latency_ns_, link_free_);
    const auto bw = static_cast<unsigned __int128>(trace_.workload().storage.bandwidth);
    const auto xfer =
        static_cast<uint64_t>((static_cast<unsigned __int128>(size) * 1'000'000'000u + bw - 1) /
                              std::max<unsigned __int128>(bw, 1));
    const uint64_t end = xfer_start + xfer;
    link_free_ = end;
    channels_.push(end);
    return end;
  }

  void StartEpoch(Job& j, uint32_t epoch, uint64_t now) {
    cache::Policy& p = *policy_;
    if (epoch == 0) {
      j.started = true;
      cache::JobSpec spec;
      spec.id = j.id;
      spec.name = j.spec->name;
      spec.batch_size = j.b;
      spec.epochs = j.epochs;
      spec.loaders = j.w;
      if (j.spec->report_compute) spec.compute_ns_per_batch = std::max<uint64_t>(1, j.compute_ns);
      if (Status s = p.AddJob(spec); !s.ok()) return Fail(s, "AddJob");
      std::vector<cache::SampleRef> refs(j.n);
      for (uint32_t k = 0; k < j.n; ++k) {
        refs[k] = {trace_.object(j.index, k), trace_.size(j.index, k)};
      }
      if (Status s = p.SetSamples(j.id, std::move(refs)); !s.ok()) return Fail(s, "SetSamples");
      if (Status s = p.SetOrder(j.id, 0, j.order); !s.ok()) return Fail(s, "SetOrder");
      if (j.epochs > 1) {
        if (Status s = p.SetOrder(j.id, 1, j.next_order); !s.ok()) return Fail(s, "SetOrder");
      }
    } else {
      j.order = std::move(j.next_order);
      j.pos_cur = std::move(j.pos_next);
      j.next_order.clear();
      j.pos_next.clear();
      if (epoch + 1 < j.epochs) {
        j.next_order = trace_.Order(j.index, epoch + 1);
        j.pos_next = Inverse(j.next_order, j.n);
        if (Status s = p.SetOrder(j.id, epoch + 1, j.next_order); !s.ok()) {
          return Fail(s, "SetOrder");
        }
      }
    }
    j.epoch = epoch;
    ApplyResult(p.BeginEpoch(j.id, epoch, now), "BeginEpoch");
    EpochResult er;
    er.start_ns = now;
    j.r.epochs.push_back(er);
    j.ready_ns.assign(j.batches, kUnset);
    j.next_assign = 0;
    j.next_compute = 0;
    j.computing = false;
    j.free_since = now;
    j.idle.clear();
    for (uint32_t w = j.w; w-- > 0;) j.idle.push_back(w);
    Assign(j, now);
  }

  // Hands batches to idle workers while the prefetch depth allows.
  void Assign(Job& j, uint64_t now) {
    const uint32_t limit = std::min(j.batches, j.next_compute + j.w);
    while (!j.idle.empty() && j.next_assign < limit) {
      const uint32_t w = j.idle.back();
      j.idle.pop_back();
      j.workers[w] = {j.next_assign++, 0};
      Step(j, w, now);
    }
  }

  // Worker w of job j continues loading its batch at `now` until it waits
  // for storage or finishes the batch.
  void Step(Job& j, uint32_t w, uint64_t now) {
    Worker& wk = j.workers[w];
    const uint32_t first = wk.batch * j.b;
    const uint32_t len = std::min(j.b, j.len - first);
    EpochResult& er = j.r.epochs.back();
    while (wk.next < len) {
      const uint32_t s = j.order[first + wk.next];
      const cache::ObjectId id = trace_.object(j.index, s);
      const uint64_t size = SizeOf(id);
      j.issued[s] = j.epoch + 1;
      ++j.r.accesses;
      uint8_t& st = State(id);
      if (st == kResident) {
        ++j.r.hits;
        ++er.hits;
        if (unread_prefetched_.erase(id) != 0) ++prefetch_hits_;
        const cache::Access a{id, size, j.id, s, now};
        Apply(policy_->OnHit(a), 0);
        disk_->OnRead(a, State(id) == kResident);
        ++wk.next;
        continue;
      }
      if (st == kInFlight) {
        // Joining a load in flight, a reader's or a prefetch's, is no hit:
        // the reader waits for storage (counted as a miss and coalesced, as
        // the daemon counts it apart from its hits). A prefetch's reader is
        // told to the policy when the bytes land (a hit for its decisions).
        ++j.r.misses;
        ++er.misses;
        ++j.r.coalesced;
        wk.asked = now;
        waiters_[id].push_back({j.index, w});
        return;
      }
      ++j.r.misses;
      ++er.misses;
      const bool streamed = size > max_object_;
      if (!streamed) st = kInFlight;
      if (!streamed && disk_->Holds(id)) {  // from the disk tier: no store channel, no read slot
        ++j.r.disk_reads;
        ++er.disk_reads;
        Event ev{disk_->Read(now, size), 0, Ev::kLoadDone, false, j.index, w, s, now};
        ev.started = now;
        ev.disk = true;
        Push(ev);
        return;
      }
      j.r.bytes_read += size;
      if (trace_.workload().read_slots != 0) {
        waiting_.push_back({j.index, w, s, now, streamed});
        IssueWaiting(now);
        return;
      }
      IssueDemand(j.index, w, s, streamed, now, now);
      return;
    }
    // Batch loaded.
    j.ready_ns[wk.batch] = now;
    j.idle.push_back(w);
    TryCompute(j, now);
    Assign(j, now);
  }

  // Prefetch: while the requests in flight (readers' and prefetches') are
  // fewer than min(prefetch, concurrency), loads the policy's hints, soonest
  // first. An object the policy then declines is not hinted again for 1 s.
  void PrefetchMore(uint64_t now) {
    if (prefetch_inflight_ + demand_inflight_ >= prefetch_limit_) return;
    if (now >= declined_until_) {
      declined_.clear();
      declined_until_ = now + 1'000'000'000;
    }
    cache::Prefetching* pf = policy_->prefetching();
    if (pf == nullptr) return;
    const std::vector<cache::PrefetchHint> hints = pf->PrefetchHints(
        prefetch_limit_ - prefetch_inflight_ - demand_inflight_, now,
        [&](cache::ObjectId o) { return State(o) != kAbsent || declined_.count(o) != 0; },
        loading_);
    for (const cache::PrefetchHint& h : hints) {
      if (prefetch_inflight_ + demand_inflight_ >= prefetch_limit_) break;
      if (State(h.object) != kAbsent || SizeOf(h.object) > max_object_) continue;
      State(h.object) = kInFlight;
      prefetching_.insert(h.object);
      loading_.push_back(h);
      ++prefetch_inflight_;
      const bool from_disk = disk_->Holds(h.object);  // moves up from the disk tier
      if (!from_disk) prefetch_bytes_ += SizeOf(h.object);
      const uint64_t end =
          from_disk ? disk_->Read(now, SizeOf(h.object)) : Request(now, SizeOf(h.object));
      Event ev{end, 0, Ev::kPrefetchDone, false, h.job - 1, 0, h.sample, now};
      ev.started = now;
      ev.disk = from_disk;
      ev.others = prefetch_inflight_ + demand_inflight_ - 1;
      Push(ev);
    }
  }

  void PrefetchDone(const Event& e) {
    const cache::ObjectId id = trace_.object(e.job, e.sample);
    const uint64_t size = SizeOf(id);
    State(id) = kAbsent;
    prefetching_.erase(id);
    loading_.erase(std::find_if(loading_.begin(), loading_.end(),
                                [&](const cache::PrefetchHint& h) { return h.object == id; }));
    --prefetch_inflight_;
    if (!e.disk) Loaded(size, e.started, e.t, e.others);
    const cache::Access a{id, size, jobs_[e.job].id, static_cast<int64_t>(e.sample), e.t};
    Apply(policy_->prefetching()->OnPrefetched(a, e.t - e.issued), id);  // it hinted
    if (e.disk) {
      disk_->OnRead(a, State(id) == kResident);
    } else {
      disk_->OnLoaded(a, State(id) == kResident);
    }
    if (State(id) == kResident) {
      ++prefetched_;
      unread_prefetched_.insert(id);
    } else {
      declined_.insert(id);
    }
    std::vector<std::pair<uint32_t, uint32_t>> waiting;
    if (auto it = waiters_.find(id); it != waiters_.end()) {
      waiting = std::move(it->second);
      waiters_.erase(it);
    }
    for (auto [ji, w] : waiting) {
      Job& j = jobs_[ji];
      Worker& wk = j.workers[w];
      const uint32_t s = j.order[wk.batch * j.b + wk.next];
      cache::Access r{id, size, j.id, static_cast<int64_t>(s), e.t};
      r.wait_ns = e.t - wk.asked;
      r.served = cache::Access::Served::kJoined;
      if (State(id) == kResident) {
        if (unread_prefetched_.erase(id) != 0) ++prefetch_hits_;
        Apply(policy_->OnHit(r), 0);
      } else {
        Apply(policy_->OnMiss(r, 0), id);
      }
      disk_->OnRead(r, State(id) == kResident);
      ++wk.next;
      Step(j, w, e.t);
    }
  }

  void IssueDemand(uint32_t job, uint32_t w, uint32_t s, bool streamed, uint64_t asked,
                   uint64_t now, uint64_t key = 0) {
    ++demand_inflight_;
    if (trace_.workload().read_slots != 0) held_.emplace(key, job);
    const uint64_t end = Request(now, SizeOf(trace_.object(job, s)));
    Event ev{end, 0, Ev::kLoadDone, streamed, job, w, s, asked};
    ev.key = key;
    ev.started = now;
    ev.others = prefetch_inflight_ + demand_inflight_ - 1;
    Push(ev);
  }

  // The order of readers' loads waiting for a read slot: the policy's
  // BytesLeft of their job (Belady, an offline bound, is given the future
  // policy's order: the bytes left to read, at the mean size, of the job or
  // of another job reading the same dataset, whichever has least).
  uint64_t KeyOf(const Job& j) const {
    if (kind_ != PolicyKind::kBelady) {
      const cache::ReadOrder* order = policy_->read_order();
      return order != nullptr ? order->BytesLeft(j.id) : 0;
    }
    uint64_t key = UINT64_MAX;
    for (uint32_t o : by_dataset_[j.dataset]) {  // jobs sharing a dataset share the key
      const Job& s = jobs_[o];
      const uint64_t total = uint64_t{s.epochs} * s.len;
      const uint64_t mean = trace_.datasets()[s.dataset].total_bytes / std::max(s.n, 1u);
      key = std::min(key, (total - std::min<uint64_t>(total, s.r.accesses)) *
                              std::max<uint64_t>(mean, 1));
    }
    return key;
  }

  // Starts the waiting readers' loads the daemon's ReadSlots would: a load
  // whose key is no larger than any other job's load's (waiting or in
  // flight; not its own job's nor its sharers': the policy's Sharers,
  // Belady's the jobs of its dataset) at once; else the first in line
  // (smallest key, then earliest asked) while fewer than read_slots are in
  // flight. The loads of one job wait with one key (its job's).
  void IssueWaiting(uint64_t now) {
    const uint32_t slots = trace_.workload().read_slots;
    struct Asking {
      uint32_t job;
      uint64_t key;
      size_t first;  // its earliest-asked waiting load
      std::vector<cache::JobId> with;
    };
    std::vector<Asking> asking;
    auto apart = [&](const Asking& a, uint32_t b) {
      if (a.job == b) return false;
      if (kind_ == PolicyKind::kBelady) return jobs_[a.job].dataset != jobs_[b].dataset;
      return !std::binary_search(a.with.begin(), a.with.end(), jobs_[b].id);
    };
    while (!waiting_.empty()) {
      asking.clear();
      for (size_t i = 0; i < waiting_.size(); ++i) {
        const uint32_t job = waiting_[i].job;
        auto it = std::find_if(asking.begin(), asking.end(),
                               [&](const Asking& a) { return a.job == job; });
        if (it == asking.end()) {
          Asking a{job, KeyOf(jobs_[job]), i, {}};
          if (kind_ != PolicyKind::kBelady && policy_->read_order() != nullptr) {
            a.with = policy_->read_order()->Sharers(jobs_[job].id);
          }
          asking.push_back(std::move(a));
        } else if (waiting_[i].asked < waiting_[it->first].asked) {
          it->first = i;
        }
      }
      const Asking* go = nullptr;
      const Asking* best = &asking[0];
      for (const Asking& a : asking) {
        if (a.key < best->key ||
            (a.key == best->key && waiting_[a.first].asked < waiting_[best->first].asked)) {
          best = &a;
        }
        bool first = true;
        for (const Asking& o : asking) first = first && !(o.key < a.key && apart(a, o.job));
        for (const auto& [key, job] : held_) {
          if (!first || key >= a.key) break;
          first = !apart(a, job);
        }
        if (first && go == nullptr) go = &a;
      }
      if (go == nullptr && demand_inflight_ < slots) go = best;
      if (go == nullptr) return;
      const Waiting wt = waiting_[go->first];
      const uint64_t key = go->key;
      waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(go->first));
      IssueDemand(wt.job, wt.worker, wt.sample, wt.streamed, wt.asked, now, key);
    }
  }

  void LoadDone(const Event& e) {
    if (!e.disk) --demand_inflight_;
    if (!e.disk && trace_.workload().read_slots != 0) {
      held_.erase(held_.find({e.key, e.job}));
      IssueWaiting(e.t);
    }
    Job& j = jobs_[e.job];
    const cache::ObjectId id = trace_.object(j.index, e.sample);
    if (!e.streamed) {
      State(id) = kAbsent;
      if (!e.disk) Loaded(SizeOf(id), e.started, e.t, e.others);
      cache::Access a{id, SizeOf(id), j.id, static_cast<int64_t>(e.sample), e.t};
      a.wait_ns = e.t - e.issued;
      Apply(policy_->OnMiss(a, e.t - e.issued), id);
      if (e.disk) {
        disk_->OnRead(a, State(id) == kResident);
      } else {
        disk_->OnLoaded(a, State(id) == kResident);
      }
    }
    std::vector<std::pair<uint32_t, uint32_t>> waiting;
    if (auto it = waiters_.find(id); it != waiters_.end()) {
      waiting = std::move(it->second);
      waiters_.erase(it);
    }
    ++j.workers[e.worker].next;
    Step(j, e.worker, e.t);
    for (auto [ji, w] : waiting) {
      ++jobs_[ji].workers[w].next;
      Step(jobs_[ji], w, e.t);
    }
  }

  static bool Ready(const Job& j) {
    return !j.computing && j.next_compute < j.batches && j.ready_ns[j.next_compute] != kUnset;
  }

  // Starts the next batch's compute when it is loaded. The ranks of a
  // distributed run take each step together (DDP's gradient all-reduce):
  // when all of them have the batch loaded and the previous step done.
  void TryCompute(Job& j, uint64_t now) {
    if (!Ready(j)) return;
    if (j.peers.empty()) return StartCompute(j, now);
    for (uint32_t p : j.peers) {
      const Job& o = jobs_[p];
      if (!Ready(o) || o.epoch != j.epoch || o.next_compute != j.next_compute) return;
    }
    for (uint32_t p : j.peers) StartCompute(jobs_[p], now);
  }

  void StartCompute(Job& j, uint64_t now) {
    const uint64_t stall = now - j.free_since;
    j.r.stall_ns += stall;
    j.r.epochs.back().stall_ns += stall;
    j.computing = true;
    Push({now + j.compute_ns, 0, Ev::kComputeDone, false, j.index, j.next_compute, 0, 0});
    ++j.next_compute;
    Assign(j, now);
  }

  void ComputeDone(Job& j, uint64_t now) {
    j.computing = false;
    j.free_since = now;
    if (j.next_compute < j.batches) return TryCompute(j, now);
    EpochResult& er = j.r.epochs.back();
    er.time_ns = now - er.start_ns;
    if (j.epoch + 1 < j.epochs) return StartEpoch(j, j.epoch + 1, now);
    j.done = true;
    j.r.completion_ns = now;
    ApplyResult(policy_->EndJob(j.id), "EndJob");
  }

  RunResult Collect() {
    RunResult r;
    r.policy = PolicyKindName(kind_);
    r.budget_bytes = budget_;
    r.distinct_bytes = trace_.distinct_bytes();
    uint64_t first = kUnset, last = 0;
    for (Job& j : jobs_) {
      r.accesses += j.r.accesses;
      r.hits += j.r.hits;
      r.misses += j.r.misses;
      r.bytes_read += j.r.bytes_read;
      r.total_stall_ns += j.r.stall_ns;
      first = std::min(first, j.r.start_ns);
      last = std::max(last, j.r.completion_ns);
      r.jobs.push_back(std::move(j.r));
    }
    r.makespan_ns = last - first;
    r.bytes_read += prefetch_bytes_;
    r.prefetched = prefetched_;
    r.prefetch_hits = prefetch_hits_;
    r.prefetch_wasted = prefetch_wasted_;
    r.prefetch_bytes = prefetch_bytes_;
    r.admissions = admissions_;
    r.evictions = evictions_;
    r.refused = refused_;
    r.max_resident_bytes = max_resident_;
    r.disk = disk_->counters();
    r.events = events_;
    return r;
  }

  static constexpr uint8_t kAbsent = 0, kResident = 1, kInFlight = 2;

  const Trace& trace_;
  const PolicyKind kind_;
  const EngineOptions opt_;
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

}  // namespace

Result<RunResult> Run(const Trace& trace, PolicyKind policy, const EngineOptions& opt) {
  Engine e(trace, policy, opt);
  return e.Go();
}

}  // namespace epochfs::sim
