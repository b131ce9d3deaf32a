#include "epochfs/cache/future_policy.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "epochfs/cache/declared_future.h"
#include "epochfs/cache/future_tier.h"
#include "epochfs/cache/next_use_cache.h"
#include "epochfs/cache/prefetch_depth.h"
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
    depth_.Read(a.object);
    Implied(a);
    return Noted(cache_.OnHit(a));
  }
  void OnRefilled(const Access& a) override { future_.OnRefilled(a); }
  Decision OnMiss(const Access& a, uint64_t load_ns) override {
    now_ = std::max(now_, a.now_ns);
    future_.OnAccess(a, /*hit=*/false, load_ns);
    depth_.Read(a.object);
    Implied(a);
    return Noted(cache_.OnMiss(a));
  }
  std::vector<PrefetchHint> PrefetchHints(size_t max, uint64_t now_ns,
                                          const std::function<bool(ObjectId)>& skip,
                                          const std::vector<PrefetchHint>& loading) override {
    now_ = std::max(now_, now_ns);
    // No more unread objects loaded ahead than the depth allows (waste
    // pulls it down: PrefetchDepth).
    max = std::min(max, depth_.Room(loading.size()));
    if (max == 0) return {};
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
    // The prefetch rule: a hint displaces only objects read after it
    // (NextUseCache::Admissible), and, where bytes bind, only while no
    // object held is read before it (MayDisplace).
    return cache_.Admissible(loading, ordered, max, now_, [&](const PrefetchHint& h) {
      return MayDisplace(h.object, h.size);
    });
  }
  std::vector<PrefetchHint> StatHints(size_t max, uint64_t now_ns,
                                      const std::function<bool(ObjectId)>& skip,
                                      const std::vector<PrefetchHint>& loading) override {
    std::vector<PrefetchHint> upcoming;
    future_.Upcoming(max, [&](ObjectId o) { return cache_.Holds(o); }, skip, &upcoming);
    if (upcoming.empty()) return {};
    const std::vector<PrefetchHint> loads = PrefetchHints(upcoming.size(), now_ns, skip, loading);
    std::erase_if(upcoming, [&](const PrefetchHint& h) {
      return std::any_of(loads.begin(), loads.end(),
                         [&](const PrefetchHint& l) { return l.object == h.object; });
    });
    return upcoming;
  }
  Decision OnPrefetched(const Access& a, uint64_t /*load_ns*/) override {
    now_ = std::max(now_, a.now_ns);
    future_.Touch(a.object, a.now_ns, a.size);  // no job read it: positions stay
    // Admitted only if it displaces no read sooner than its own
    // (NextUseCache::OnPrefetched).
    // (Asked only when it does not fit: what fits displaces nothing, and the
    // rule's scan of the reads before it costs the most of a prefetch's
    // policy work.)
    const bool fits = cache_.used() + a.size <= cache_.budget();
    Decision d = Noted(cache_.OnPrefetched(a, fits || MayDisplace(a.object, a.size)));
    if (d.admit) depth_.Admitted(a.object);
    return d;
  }
  void OnDropped(ObjectId id) override {
    future_.Touch(id, now_);
    depth_.Left(id);
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
  // Whether a load ahead of `object` (`size` bytes) may displace anything
  // now. Where the store's bandwidth binds (a request costs no more than
  // the object's bytes: request_bytes <= size), only while no object held
  // is read before it: read, such an object moves on to a later read and
  // may then be the one to evict, so displacing now could cost a load more
  // than waiting for its read would (DeclaredFuture::HeldReadBefore).
  // Objects loaded ahead and not read yet do not count: this rule let them
  // in, as the hints before this one. Where requests bind, a byte loaded
  // ahead costs little and hides a request's latency: the victims being
  // read after it (NextUseCache) is the whole rule.
  bool MayDisplace(ObjectId object, uint64_t size) const {
    if (cache_.request_bytes() > std::max<uint64_t>(size, 1)) return true;
    return !future_.HeldReadBefore(
        object, [&](ObjectId o) { return cache_.Holds(o) && !depth_.Unread(o); });
  }

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
  // Tells the future (prefetch cursors) and the prefetch depth (waste)
  // what a Decision evicts.
  Decision Noted(Decision d) {
    if (!d.evict.empty()) future_.Evicted(d.evict);
    for (ObjectId o : d.evict) depth_.Left(o);
    return d;
  }

  uint64_t now_ = 0;
  DeclaredFuture future_;
  NextUseCache cache_;
  FutureTier tier_{future_};  // the disk tier's placement (future_tier.h)
  PrefetchDepth depth_;
  const bool order_jobs_;
};

}  // namespace

std::unique_ptr<Policy> MakeFuturePolicy(const FuturePolicyParams& params) {
  return std::make_unique<FuturePolicy>(params);
}

}  // namespace epochfs::cache
