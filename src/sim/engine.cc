// Engine: a run's frame: its setup from the Trace, the event loop, the future
// Belady is shown (cache::Future), the policy it runs and the counts gathered
// at the end. What happens at each event lives in engine_readers.cc (jobs,
// workers, computes) and engine_loads.cc (the store, loads, prefetch);
// engine_model.h holds the state they share.
#include "epochfs/sim/engine.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine_model.h"
#include "epochfs/cache/policy_factory.h"

namespace epochfs::sim {
namespace engine_impl {

Engine::Engine(const Trace& trace, PolicyKind kind, uint64_t check_every)
    : trace_(trace), kind_(kind), check_every_(check_every), budget_(trace.budget()) {
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

Result<RunResult> Engine::Go() {
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
    if (check_every_ != 0 && events_ % check_every_ == 0) {
      if (Status s = policy_->CheckInvariants(); !s.ok()) return s;
    }
    disk_->Drain();
  }
  if (!status_.ok()) return status_;
  if (Status s = policy_->CheckInvariants(); !s.ok()) return s;
  return Collect();
}

bool Engine::NextUse(cache::ObjectId object, Use* out) const {
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

// The job's position is its reads issued so far; its pace the time per read
// so far (before it has read a few batches: the static estimate pace_ns).
Engine::Line Engine::LineOf(uint32_t job, uint64_t now) const {
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

Status Engine::MakePolicy() {
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

void Engine::Push(Event e) {
  e.seq = seq_++;
  queue_.push(e);
}

void Engine::Fail(const Status& s, const std::string& what) {
  if (status_.ok()) status_ = Internal(what + ": " + s.message());
}

RunResult Engine::Collect() {
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

}  // namespace engine_impl

Result<RunResult> Run(const Trace& trace, PolicyKind policy, const EngineOptions& opt) {
  engine_impl::Engine e(trace, policy, opt.check_every);
  return e.Go();
}

}  // namespace epochfs::sim
