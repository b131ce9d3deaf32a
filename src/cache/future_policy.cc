#include "epochfs/cache/future_policy.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "epochfs/cache/declared_future.h"
#include "epochfs/cache/future_tier.h"
#include "epochfs/cache/next_use_cache.h"
#include "epochfs/cache/prefetching.h"
#include "epochfs/cache/read_order.h"

namespace epochfs::cache {
namespace {

class FuturePolicy final : public Policy, public Prefetching, public ReadOrder {
 public:
  explicit FuturePolicy(const FuturePolicyParams& p)
      : future_(std::max<uint64_t>(1, p.default_pace_ns)),
        cache_(p.budget_bytes, future_, p.request_bytes),
        order_jobs_(p.order_jobs) {
    future_.set_implied_reads(p.implied_reads);
    future_.set_weigh_hits(p.weigh_hits);
  }

  const char* name() const override { return "future"; }
  Prefetching* prefetching() override { return this; }
  const ReadOrder* read_order() const override { return this; }
  TierPlacement* tier_placement() override { return &tier_; }
  uint64_t budget() const override { return cache_.budget(); }
  uint64_t resident_bytes() const override { return cache_.used(); }

  Decision OnHit(const Access& a) override {
    now_ = std::max(now_, a.now_ns);
    future_.OnAccess(a, /*hit=*/true, 0);
    Implied(a);
    return Noted(cache_.OnHit(a));
  }
  Decision OnMiss(const Access& a, uint64_t load_ns) override {
    now_ = std::max(now_, a.now_ns);
    future_.OnAccess(a, /*hit=*/false, load_ns);
    Implied(a);
    return Noted(cache_.OnMiss(a));
  }
  std::vector<PrefetchHint> PrefetchHints(size_t max, uint64_t now_ns,
                                          const std::function<bool(ObjectId)>& skip,
                                          const std::vector<PrefetchHint>& loading) override {
    now_ = std::max(now_, now_ns);
    std::vector<PrefetchHint> upcoming;
    future_.Upcoming(max, [&](ObjectId o) { return cache_.Holds(o); }, skip, &upcoming);
    // Soonest first across jobs (an object several jobs read: its first
    // read); with order_jobs, the job first in line first (BytesLeft).
    // Weighing hits (FuturePolicyParams::weigh_hits), the time to the read
    // over what its hit is worth, as the cache ranks what it holds.
    std::vector<std::tuple<uint64_t, double, size_t>> when;
    when.reserve(upcoming.size());
    for (size_t i = 0; i < upcoming.size(); ++i) {
      Future::Use use;
      if (!future_.NextUse(upcoming[i].object, &use)) continue;
      const Future::Line line = future_.LineOf(use.job, now_);
      when.emplace_back(order_jobs_ ? future_.BytesLeft(upcoming[i].job) : 0,
                        double(line.At(use.pos) - now_) / line.worth, i);
    }
    std::sort(when.begin(), when.end());
    std::vector<PrefetchHint> ordered;
    ordered.reserve(when.size());
    for (const auto& tw : when) {
      const size_t i = std::get<2>(tw);  // (no structured binding: lambdas below capture it)
      const bool again = std::any_of(ordered.begin(), ordered.end(), [&](const PrefetchHint& h) {
        return h.object == upcoming[i].object;
      });
      if (!again) ordered.push_back(upcoming[i]);
    }
    return cache_.Admissible(loading, ordered, max, now_);
  }
  Decision OnPrefetched(const Access& a, uint64_t /*load_ns*/) override {
    now_ = std::max(now_, a.now_ns);
    future_.Touch(a.object, a.now_ns, a.size);  // no job read it: positions stay
    return Noted(cache_.OnMiss(a));
  }
  void OnDropped(ObjectId id) override {
    future_.Touch(id, now_);
    cache_.OnDropped(id);
    future_.Evicted({id});
  }

  Status AddJob(const JobSpec& spec) override { return future_.AddJob(spec); }
  Status SetSamples(JobId job, std::vector<SampleRef> samples) override {
    std::vector<ObjectId> before = future_.ObjectsOf(job);
    Status s = future_.SetSamples(job, std::move(samples));
    if (s.ok()) Rekey(before, job);  // the old list's objects are unclaimed now
    return s;
  }
  Status SetOrder(JobId job, uint32_t epoch, std::vector<uint32_t> order) override {
    Status s = future_.SetOrder(job, epoch, std::move(order));
    if (s.ok()) Rekey({}, job);
    return s;
  }
  Result<Decision> BeginEpoch(JobId job, uint32_t epoch, uint64_t now_ns) override {
    now_ = std::max(now_, now_ns);
    Status s = future_.BeginEpoch(job, epoch, now_ns);
    if (!s.ok()) return s;
    return Rekey({}, job);
  }
  Decision Progress(JobId job, uint32_t epoch, uint64_t position, uint64_t now_ns) override {
    now_ = std::max(now_, now_ns);
    implied_.clear();
    future_.Progress(job, epoch, position, &implied_);
    return implied_.empty() ? Decision{} : Rekey(implied_, kNoJob);
  }
  Status RestartEpoch(JobId job, uint64_t now_ns) override {
    now_ = std::max(now_, now_ns);
    Status s = future_.RestartEpoch(job, now_ns);
    if (s.ok()) Rekey({}, job);
    return s;
  }
  Result<Decision> EndJob(JobId job) override {
    std::vector<ObjectId> objects = future_.ObjectsOf(job);
    Status s = future_.EndJob(job);
    if (!s.ok()) return s;
    return Rekey(objects, kNoJob);
  }
  Result<Decision> SetBudget(uint64_t bytes) override {
    return Noted(cache_.SetBudget(bytes, now_));
  }
  void SetRequestBytes(uint64_t bytes) override { cache_.set_request_bytes(bytes); }

  uint64_t BytesLeft(JobId job) const override { return future_.BytesLeft(job); }
  std::vector<JobId> Sharers(JobId job) const override { return future_.Sharers(job); }
  std::vector<JobSnapshot> Jobs() const override {
    return future_.Snapshots(cache_.BytesByJob());
  }
  Status CheckInvariants() const override { return cache_.CheckInvariants(); }

 private:
  // The reads `a` implies (FuturePolicyParams::implied_reads) move their
  // objects' next use on: filed again (with their blocks).
  void Implied(const Access& a) {
    implied_.clear();
    future_.ImplyReads(a, &implied_);
    if (!implied_.empty()) Rekey(implied_, kNoJob);
  }
  std::vector<ObjectId> implied_;  // scratch of Implied

  // Files `extra` and job `job`'s objects, and their blocks, again under
  // their next use. The Decision stays empty: every object keeps a next use
  // (claimed or not).
  Decision Rekey(const std::vector<ObjectId>& extra, JobId job) {
    Decision d;
    std::vector<ObjectId> blocks;
    auto rekey = [&](ObjectId o) {
      cache_.Rekey(o, now_, &d);
      tier_.Refile(o, now_);
      blocks.clear();
      future_.BlocksOf(o, &blocks);
      for (ObjectId b : blocks) {
        cache_.Rekey(b, now_, &d);
        tier_.Refile(b, now_);
      }
    };
    for (ObjectId o : extra) rekey(o);
    if (job != kNoJob) {
      for (ObjectId o : future_.ObjectsOf(job)) rekey(o);
    }
    return Noted(std::move(d));
  }
  // Tells the future (prefetch cursors) what a Decision evicts.
  Decision Noted(Decision d) {
    if (!d.evict.empty()) future_.Evicted(d.evict);
    return d;
  }

  uint64_t now_ = 0;
  DeclaredFuture future_;
  NextUseCache cache_;
  FutureTier tier_{future_};  // the disk tier's placement (future_tier.h)
  const bool order_jobs_;
};

}  // namespace

std::unique_ptr<Policy> MakeFuturePolicy(const FuturePolicyParams& params) {
  return std::make_unique<FuturePolicy>(params);
}

}  // namespace epochfs::cache
