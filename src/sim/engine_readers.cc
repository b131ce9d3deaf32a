// Engine: the jobs' side of the model. A job's epochs (what the policy is
// told at each start), its loader workers (batch k may start once batch k-W
// went to compute; a worker reads its batch's samples one after the other: a
// hit, a join of a load in flight, or a miss handed to engine_loads.cc), and
// its computes (the ranks of a distributed run step together).
#include <algorithm>
#include <utility>
#include <vector>

#include "engine_model.h"

namespace epochfs::sim::engine_impl {

// Epoch `epoch` of j begins at `now`: the policy hears the job's declarations
// (epoch 0) or the order of the epoch after the next (K > 0), then
// BeginEpoch; every worker is idle and is handed a batch.
void Engine::StartEpoch(Job& j, uint32_t epoch, uint64_t now) {
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
void Engine::Assign(Job& j, uint64_t now) {
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
void Engine::Step(Job& j, uint32_t w, uint64_t now) {
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

bool Engine::Ready(const Job& j) {
  return !j.computing && j.next_compute < j.batches && j.ready_ns[j.next_compute] != kUnset;
}

// Starts the next batch's compute when it is loaded. The ranks of a
// distributed run take each step together (DDP's gradient all-reduce):
// when all of them have the batch loaded and the previous step done.
void Engine::TryCompute(Job& j, uint64_t now) {
  if (!Ready(j)) return;
  if (j.peers.empty()) return StartCompute(j, now);
  for (uint32_t p : j.peers) {
    const Job& o = jobs_[p];
    if (!Ready(o) || o.epoch != j.epoch || o.next_compute != j.next_compute) return;
  }
  for (uint32_t p : j.peers) StartCompute(jobs_[p], now);
}

void Engine::StartCompute(Job& j, uint64_t now) {
  const uint64_t stall = now - j.free_since;
  j.r.stall_ns += stall;
  j.r.epochs.back().stall_ns += stall;
  j.computing = true;
  Push({now + j.compute_ns, 0, Ev::kComputeDone, false, j.index, j.next_compute, 0, 0});
  ++j.next_compute;
  Assign(j, now);
}

// A batch's compute ended: the next one may start; after the epoch's last,
// the next epoch begins or the job ends (EndJob).
void Engine::ComputeDone(Job& j, uint64_t now) {
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

}  // namespace epochfs::sim::engine_impl
