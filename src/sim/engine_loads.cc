// Engine: the store and the loads in flight. The model store (capacity =
// budget) as the policy's DecisionTarget; storage requests over `concurrency`
// channels, the iops limit and the shared link; readers' loads, waiting for a
// read slot in the daemon's ReadSlots order when the workload has read_slots;
// their completion (the policy's OnMiss, the disk tier's placement, the
// readers joined to them); and prefetch, the policy's hints loaded while
// requests in flight are fewer than min(prefetch, concurrency).
#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "engine_model.h"
#include "epochfs/cache/read_order.h"

namespace epochfs::sim::engine_impl {

// Completion time of a storage request of `size` bytes issued at `now`.
uint64_t Engine::Request(uint64_t now, uint64_t size) {
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

// The model store as a DecisionTarget (cache/decision_apply.h).
class Engine::StoreTarget final : public cache::DecisionTarget {
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
void Engine::Apply(const cache::Decision& d, cache::ObjectId loaded) {
  StoreTarget target(*this);
  const cache::Applied a = cache::ApplyDecision(
      d, loaded != 0 ? std::optional<cache::ObjectId>(loaded) : std::nullopt, *policy_, target);
  evictions_ += a.evicted;
  admissions_ += a.admitted ? 1 : 0;
  refused_ += a.refused ? 1 : 0;
}
void Engine::ApplyResult(const Result<cache::Decision>& d, const char* what) {
  if (!d.ok()) return Fail(d.status(), what);
  Apply(d.value(), 0);
}

// A load from the store, start to end: with request_bytes = "auto" the
// policy hears each new estimate of a request's cost (as the daemon's
// CacheFront::LoadedLocked).
void Engine::Loaded(uint64_t bytes, uint64_t start, uint64_t end, uint32_t others) {
  if (request_cost_ != nullptr && request_cost_->OnLoad(bytes, start, end, others)) {
    policy_->SetRequestBytes(request_cost_->bytes());
  }
}

void Engine::IssueDemand(uint32_t job, uint32_t w, uint32_t s, bool streamed,
                         uint64_t asked, uint64_t now, uint64_t key) {
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
uint64_t Engine::KeyOf(const Job& j) const {
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
void Engine::IssueWaiting(uint64_t now) {
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

void Engine::LoadDone(const Event& e) {
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

// Prefetch: while the requests in flight (readers' and prefetches') are
// fewer than min(prefetch, concurrency), loads the policy's hints, soonest
// first. An object the policy then declines is not hinted again for 1 s.
void Engine::PrefetchMore(uint64_t now) {
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

void Engine::PrefetchDone(const Event& e) {
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

}  // namespace epochfs::sim::engine_impl
