#include "epochfs/sim/replay.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "epochfs/cache/decision_apply.h"
#include "epochfs/cache/future.h"
#include "epochfs/cache/policy_factory.h"
#include "epochfs/cache/prefetching.h"

namespace epochfs::sim {
namespace {

using trace::TraceEvent;
using trace::TraceKind;

bool IsAccess(const TraceEvent& e) {
  return e.kind == TraceKind::kHit || e.kind == TraceKind::kMiss;
}

// The trace's own future, for Belady: the next recorded access of an object
// at or after the cursor (the accesses issued so far). One "job": positions
// are access indices, one per unit of time.
class TraceFuture final : public cache::Future {
 public:
  explicit TraceFuture(const std::vector<TraceEvent>& events) {
    uint64_t index = 0;
    for (const TraceEvent& e : events) {
      if (IsAccess(e)) {
        uses_[SlotOf(e.access.object)].push_back(index++);
      } else if (e.kind == TraceKind::kSamples) {
        for (const cache::SampleRef& s : e.samples) SlotOf(s.object);
      } else if (e.kind == TraceKind::kDropped) {
        SlotOf(e.access.object);
      }
    }
    next_.assign(uses_.size(), 0);
  }
  // Accesses [0, n) are issued.
  void set_issued(uint64_t n) { issued_ = n; }

  size_t Slots() const override { return uses_.size(); }
  size_t Slot(cache::ObjectId object) const override {
    auto it = slot_.find(object);
    return it == slot_.end() ? uses_.size() : it->second;  // never asked: every object is known
  }
  bool NextUse(cache::ObjectId object, Use* out) const override {
    auto it = slot_.find(object);
    if (it == slot_.end()) return false;
    const std::vector<uint64_t>& u = uses_[it->second];
    size_t& k = next_[it->second];
    while (k < u.size() && u[k] < issued_) ++k;
    if (k == u.size()) return false;
    *out = Use{0, u[k]};
    return true;
  }
  size_t Jobs() const override { return 1; }
  Line LineOf(uint32_t /*job*/, uint64_t now) const override {
    Line l;
    l.origin = now;
    l.done = issued_;
    l.pace = 1.0;
    l.floor = now;
    return l;
  }

 private:
  size_t SlotOf(cache::ObjectId o) {
    auto [it, fresh] = slot_.emplace(o, uses_.size());
    if (fresh) uses_.emplace_back();
    return it->second;
  }
  std::unordered_map<cache::ObjectId, size_t> slot_;
  std::vector<std::vector<uint64_t>> uses_;
  mutable std::vector<size_t> next_;
  uint64_t issued_ = 0;
};

class Replayer {
 public:
  Replayer(const std::vector<TraceEvent>& events, PolicyKind kind)
      : events_(events), kind_(kind), future_(events) {
    budget_ = events.front().budget;
    request_bytes_ = events.front().request_bytes;
    weigh_hits_ = events.front().weigh_hits;
  }

  Result<ReplayResult> Go(uint64_t check_every) {
    auto made = Make();
    if (!made.ok()) return made.status();
    p_ = std::move(made).value();
    r_.policy = PolicyKindName(kind_);
    uint64_t n = 0;
    for (const TraceEvent& e : events_) {
      Step(e);
      if (!status_.ok()) return status_;
      if (check_every != 0 && ++n % check_every == 0) {
        if (Status s = p_->CheckInvariants(); !s.ok()) return s;
      }
    }
    if (Status s = p_->CheckInvariants(); !s.ok()) return s;
    return r_;
  }

 private:
  Result<std::unique_ptr<cache::Policy>> Make() {
    cache::PolicyParams p;  // the daemon's defaults, but for what the trace recorded
    p.kind = kind_;
    p.budget_bytes = budget_;
    p.future.request_bytes = request_bytes_;
    p.future.weigh_hits = weigh_hits_;
    p.oracle = &future_;
    return cache::MakePolicy(p);
  }

  uint64_t MaxObject() const { return std::min<uint64_t>(budget_ / 4, uint64_t{1} << 30); }

  // The shadow store as a DecisionTarget (cache/decision_apply.h).
  class ShadowTarget final : public cache::DecisionTarget {
   public:
    ShadowTarget(Replayer& r, uint64_t size) : r_(r), size_(size) {}
    bool Evict(cache::ObjectId v) override {
      auto it = r_.resident_.find(v);
      if (it == r_.resident_.end()) return false;
      r_.used_ -= it->second;
      r_.resident_.erase(it);
      return true;
    }
    Admission Admit(cache::ObjectId loaded) override {
      if (r_.resident_.count(loaded) != 0) return Admission::kPresent;
      if (r_.used_ + size_ > r_.budget_) {
        r_.just_refused_ = loaded;
        return Admission::kRefused;
      }
      r_.resident_.emplace(loaded, size_);
      r_.used_ += size_;
      return Admission::kAdmitted;
    }

   private:
    Replayer& r_;
    const uint64_t size_;  // the loaded object's
  };

  // Evictions, then the admission of `loaded` (0: none) of `size` bytes.
  void Apply(const cache::Decision& d, cache::ObjectId loaded, uint64_t size) {
    ShadowTarget target(*this, size);
    const cache::Applied a = cache::ApplyDecision(
        d, loaded != 0 ? std::optional<cache::ObjectId>(loaded) : std::nullopt, *p_, target);
    r_.evictions += a.evicted;
    r_.admissions += a.admitted ? 1 : 0;
    r_.refused += a.refused ? 1 : 0;
  }
  void ApplyResult(const Result<cache::Decision>& d) {
    if (d.ok()) Apply(d.value(), 0, 0);
  }
  void Count(const Status& s) {
    if (!s.ok()) ++r_.rejected_calls;
  }

  void Step(const TraceEvent& e) {
    const cache::ObjectId refused = just_refused_;
    just_refused_ = 0;
    cache::Policy& p = *p_;
    switch (e.kind) {
      case TraceKind::kStart:
        break;
      case TraceKind::kAddJob:
        Count(p.AddJob(e.spec));
        break;
      case TraceKind::kSamples:
        Count(p.SetSamples(e.job, e.samples));
        break;
      case TraceKind::kOrder:
        Count(p.SetOrder(e.job, e.epoch, e.order));
        break;
      case TraceKind::kBeginEpoch: {
        auto d = p.BeginEpoch(e.job, e.epoch, e.now_ns);
        Count(d.status());
        ApplyResult(d);
        break;
      }
      case TraceKind::kRestartEpoch:
        Count(p.RestartEpoch(e.job, e.now_ns));
        break;
      case TraceKind::kEndJob: {
        auto d = p.EndJob(e.job);
        Count(d.status());
        ApplyResult(d);
        break;
      }
      case TraceKind::kBudget: {
        auto d = p.SetBudget(e.budget);
        if (!d.ok()) break;  // the daemon keeps its budget too (Unsupported)
        budget_ = std::max(budget_, e.budget);
        Apply(d.value(), 0, 0);
        budget_ = e.budget;
        break;
      }
      case TraceKind::kRequestBytes:
        p.SetRequestBytes(e.request_bytes);
        break;
      case TraceKind::kProgress:
        Apply(p.Progress(e.job, e.epoch, e.position, e.now_ns), 0, 0);
        break;
      case TraceKind::kHit:
      case TraceKind::kMiss: {
        const cache::Access& a = e.access;
        ++r_.accesses;
        future_.set_issued(r_.accesses);
        if (resident_.count(a.object) != 0) {
          ++r_.hits;
          Apply(p.OnHit(a), 0, 0);
        } else {
          ++r_.misses;
          r_.bytes_read += a.size;
          if (a.size <= MaxObject()) Apply(p.OnMiss(a, e.load_ns), a.object, a.size);
        }
        break;
      }
      case TraceKind::kRefilled:
        // The live hit was a refill: the policy's counters, no decision.
        p.OnRefilled(e.access);
        break;
      case TraceKind::kPrefetch: {
        // Loaded ahead by the daemon's prefetcher: a policy that takes
        // prefetched objects (future) decides as it did live; the others
        // admit none. Its bytes count when admitted.
        // Its bytes were read from LOWER whatever the policy decides; a
        // policy without prefetching would not have asked for them.
        const cache::Access& a = e.access;
        cache::Prefetching* pf = p.prefetching();
        if (pf == nullptr) break;
        r_.bytes_read += a.size;
        r_.prefetch_bytes += a.size;
        if (resident_.count(a.object) != 0 || a.size > MaxObject()) break;
        const uint64_t before = r_.admissions;
        Apply(pf->OnPrefetched(a, e.load_ns), a.object, a.size);
        if (r_.admissions != before) ++r_.prefetched;
        break;
      }
      case TraceKind::kDropped: {
        const cache::ObjectId o = e.access.object;
        auto it = resident_.find(o);
        if (it != resident_.end()) {
          used_ -= it->second;
          resident_.erase(it);
          p.OnDropped(o);
        } else if (o != refused) {  // a refusal this replay already reported
          p.OnDropped(o);
        }
        break;
      }
    }
  }

  const std::vector<TraceEvent>& events_;
  const PolicyKind kind_;
  TraceFuture future_;
  std::unique_ptr<cache::Policy> p_;
  uint64_t budget_ = 0, used_ = 0;
  uint64_t request_bytes_ = 0;  // the live policy's (trace "start")
  bool weigh_hits_ = false;     // the live policy's (trace "start")
  std::unordered_map<cache::ObjectId, uint64_t> resident_;
  cache::ObjectId just_refused_ = 0;
  ReplayResult r_;
  Status status_;
};

}  // namespace

TraceSummary Summarize(const std::vector<TraceEvent>& events) {
  TraceSummary s;
  if (!events.empty()) {
    s.policy = events.front().policy;
    s.budget = events.front().budget;
  }
  for (const TraceEvent& e : events) {
    if (e.kind == TraceKind::kAddJob) ++s.jobs;
    if (e.kind == TraceKind::kPrefetch) {
      ++s.prefetches;
      s.bytes_read += e.access.size;
    }
    if (e.kind == TraceKind::kRefilled) {  // a hit recorded before: now a refill
      ++s.refills;
      s.bytes_read += e.access.size;
    }
    if (!IsAccess(e)) continue;
    ++s.accesses;
    if (e.kind == TraceKind::kHit) {
      ++s.hits;
      if (e.access.served == cache::Access::Served::kJoined) ++s.joined;
      if (e.access.served == cache::Access::Served::kRefill) {
        ++s.refills;
        s.bytes_read += e.access.size;
      }
    } else {
      ++s.misses;
      s.bytes_missed += e.access.size;
      s.bytes_read += e.access.size;
    }
  }
  return s;
}

Result<ReplayResult> Replay(const std::vector<TraceEvent>& events, PolicyKind kind,
                            uint64_t check_every) {
  if (events.empty() || events.front().kind != TraceKind::kStart) {
    return InvalidArgument("a trace begins with a \"start\" event");
  }
  Replayer r(events, kind);
  return r.Go(check_every);
}

namespace {

double Ratio(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : double(a) / double(b); }

}  // namespace

std::string FormatReplayTable(const std::string& origin, const TraceSummary& live,
                              const std::vector<ReplayResult>& runs) {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "trace %s: policy %s, budget %.2f MiB, %llu job(s), %llu accesses\n\n", origin.c_str(),
                live.policy.c_str(), double(live.budget) / (1 << 20),
                static_cast<unsigned long long>(live.jobs),
                static_cast<unsigned long long>(live.accesses));
  out += buf;
  std::snprintf(buf, sizeof buf, "%-14s %12s %12s %7s %12s %10s\n", "policy", "hits", "misses",
                "hit%", "read_MiB", "evictions");
  out += buf;
  std::snprintf(buf, sizeof buf, "%-14s %12llu %12llu %7.1f %12.2f %10s\n",
                ("live " + live.policy).c_str(), static_cast<unsigned long long>(live.hits),
                static_cast<unsigned long long>(live.misses), 100 * Ratio(live.hits, live.accesses),
                double(live.bytes_read) / (1 << 20), "-");
  out += buf;
  bool bound = false;
  for (const ReplayResult& r : runs) {
    // Belady replays without prefetch: its row bounds the misses, not the
    // bytes read nor the stall of a policy that loads ahead.
    const bool belady = r.policy == "belady";
    bound = bound || belady;
    std::snprintf(buf, sizeof buf, "%-14s %12llu %12llu %7.1f %12.2f %10llu\n",
                  (belady ? std::string("belady*") : r.policy).c_str(),
                  static_cast<unsigned long long>(r.hits),
                  static_cast<unsigned long long>(r.misses), 100 * Ratio(r.hits, r.accesses),
                  double(r.bytes_read) / (1 << 20), static_cast<unsigned long long>(r.evictions));
    out += buf;
  }
  out += "\nread_MiB: every byte read from LOWER (misses, prefetches, refills).\n"
         "hits: the policy's hits, "
         + std::to_string(live.joined) + " of the live ones joined a load in flight and " +
         std::to_string(live.refills) + " were refills (both waited for LOWER).\n";
  if (bound) {
    out += "* Belady is replayed without prefetch: a bound on misses, not on the bytes read\n"
           "  nor the stall of a policy that prefetches.\n";
  }
  return out;
}

std::string FormatReplayJson(const std::string& origin, const TraceSummary& live,
                             const std::vector<ReplayResult>& runs) {
  nlohmann::json j;
  j["trace"] = {{"file", origin},       {"policy", live.policy},     {"budget_bytes", live.budget},
                {"jobs", live.jobs},     {"accesses", live.accesses}, {"hits", live.hits},
                {"misses", live.misses}, {"bytes_missed", live.bytes_missed},
                {"prefetches", live.prefetches}, {"joined", live.joined},
                {"refills", live.refills},      {"bytes_read", live.bytes_read}};
  nlohmann::json rs = nlohmann::json::array();
  for (const ReplayResult& r : runs) {
    rs.push_back({{"policy", r.policy},
                  {"accesses", r.accesses},
                  {"hits", r.hits},
                  {"misses", r.misses},
                  {"hit_ratio", Ratio(r.hits, r.accesses)},
                  {"bytes_read", r.bytes_read},
                  {"admissions", r.admissions},
                  {"evictions", r.evictions},
                  {"refused", r.refused},
                  {"prefetched", r.prefetched},
                  {"prefetch_bytes", r.prefetch_bytes},
                  {"bound_on_misses_only", r.policy == "belady"},
                  {"rejected_calls", r.rejected_calls}});
  }
  j["replays"] = std::move(rs);
  return j.dump(2) + "\n";
}

}  // namespace epochfs::sim
