#include "epochfs/trace/recording_policy.h"

#include <utility>

#include "epochfs/cache/prefetching.h"
#include "epochfs/cache/read_order.h"
#include "epochfs/trace/trace_event.h"

namespace epochfs::trace {
namespace {

using cache::Access;
using cache::Decision;
using cache::JobId;
using cache::ObjectId;

class RecordingPolicy final : public cache::Policy, public cache::Prefetching {
 public:
  RecordingPolicy(std::unique_ptr<cache::Policy> inner, TraceSink sink, RecordedParams params)
      : inner_(std::move(inner)), sink_(std::move(sink)) {
    TraceEvent e;
    e.kind = TraceKind::kStart;
    e.policy = inner_->name();
    e.budget = inner_->budget();
    e.request_bytes = params.request_bytes;
    e.weigh_hits = params.weigh_hits;
    Emit(e);
  }

  const char* name() const override { return inner_->name(); }
  uint64_t budget() const override { return inner_->budget(); }
  uint64_t resident_bytes() const override { return inner_->resident_bytes(); }
  uint64_t pool_bytes() const override { return inner_->pool_bytes(); }
  uint64_t shared_bytes() const override { return inner_->shared_bytes(); }

  Decision OnHit(const Access& a) override {
    TraceEvent e;
    e.kind = TraceKind::kHit;
    e.access = a;
    Emit(e);
    return inner_->OnHit(a);
  }
  void OnRefilled(const Access& a) override {
    TraceEvent e;
    e.kind = TraceKind::kRefilled;
    e.access = a;
    Emit(e);
    inner_->OnRefilled(a);
  }
  Decision OnMiss(const Access& a, uint64_t load_ns) override {
    TraceEvent e;
    e.kind = TraceKind::kMiss;
    e.access = a;
    e.load_ns = load_ns;
    Emit(e);
    return inner_->OnMiss(a, load_ns);
  }
  // The disk tier's placement: the inner policy's (not recorded: the
  // simulator models the RAM tier).
  cache::TierPlacement* tier_placement() override { return inner_->tier_placement(); }
  // Prefetching: the inner policy's, each load ahead recorded.
  cache::Prefetching* prefetching() override {
    return inner_->prefetching() != nullptr ? this : nullptr;
  }
  std::vector<cache::PrefetchHint> PrefetchHints(
      size_t max, uint64_t now_ns, const std::function<bool(ObjectId)>& skip,
      const std::vector<cache::PrefetchHint>& loading) override {
    // A question: not recorded.
    return inner_->prefetching()->PrefetchHints(max, now_ns, skip, loading);
  }
  std::vector<cache::PrefetchHint> StatHints(
      size_t max, uint64_t now_ns, const std::function<bool(ObjectId)>& skip,
      const std::vector<cache::PrefetchHint>& loading) override {
    return inner_->prefetching()->StatHints(max, now_ns, skip, loading);  // a question
  }
  Decision OnPrefetched(const Access& a, uint64_t load_ns) override {
    TraceEvent e;
    e.kind = TraceKind::kPrefetch;
    e.access = a;
    e.load_ns = load_ns;
    Emit(e);
    return inner_->prefetching()->OnPrefetched(a, load_ns);
  }
  void OnDropped(ObjectId id) override {
    TraceEvent e;
    e.kind = TraceKind::kDropped;
    e.access.object = id;
    Emit(e);
    inner_->OnDropped(id);
  }
  Status AddJob(const cache::JobSpec& spec) override {
    TraceEvent e;
    e.kind = TraceKind::kAddJob;
    e.spec = spec;
    Emit(e);
    return inner_->AddJob(spec);
  }
  Status SetSamples(JobId job, std::vector<cache::SampleRef> samples) override {
    TraceEvent e;
    e.kind = TraceKind::kSamples;
    e.job = job;
    e.samples = samples;
    Emit(e);
    return inner_->SetSamples(job, std::move(samples));
  }
  Status SetOrder(JobId job, uint32_t epoch, std::vector<uint32_t> order) override {
    TraceEvent e;
    e.kind = TraceKind::kOrder;
    e.job = job;
    e.epoch = epoch;
    e.order = order;
    Emit(e);
    return inner_->SetOrder(job, epoch, std::move(order));
  }
  Result<Decision> BeginEpoch(JobId job, uint32_t epoch, uint64_t now_ns) override {
    TraceEvent e;
    e.kind = TraceKind::kBeginEpoch;
    e.job = job;
    e.epoch = epoch;
    e.now_ns = now_ns;
    Emit(e);
    return inner_->BeginEpoch(job, epoch, now_ns);
  }
  // A job's progress report: recorded and passed on (the wrapped policy may
  // count the reads it implies: FuturePolicyParams::implied_reads).
  Decision Progress(JobId job, uint32_t epoch, uint64_t position, uint64_t now_ns) override {
    TraceEvent e;
    e.kind = TraceKind::kProgress;
    e.job = job;
    e.epoch = epoch;
    e.position = position;
    e.now_ns = now_ns;
    Emit(e);
    return inner_->Progress(job, epoch, position, now_ns);
  }
  // The order of readers' loads: the wrapped policy's (a question: not
  // recorded).
  const cache::ReadOrder* read_order() const override { return inner_->read_order(); }
  Status RestartEpoch(JobId job, uint64_t now_ns) override {
    TraceEvent e;
    e.kind = TraceKind::kRestartEpoch;
    e.job = job;
    e.now_ns = now_ns;
    Emit(e);
    return inner_->RestartEpoch(job, now_ns);
  }
  Result<Decision> EndJob(JobId job) override {
    TraceEvent e;
    e.kind = TraceKind::kEndJob;
    e.job = job;
    Emit(e);
    return inner_->EndJob(job);
  }
  Result<Decision> SetBudget(uint64_t bytes) override {
    TraceEvent e;
    e.kind = TraceKind::kBudget;
    e.budget = bytes;
    Emit(e);
    return inner_->SetBudget(bytes);
  }
  void SetRequestBytes(uint64_t bytes) override {
    TraceEvent e;
    e.kind = TraceKind::kRequestBytes;
    e.request_bytes = bytes;
    Emit(e);
    inner_->SetRequestBytes(bytes);
  }

  std::vector<cache::JobSnapshot> Jobs() const override { return inner_->Jobs(); }
  const cache::EpochRegions* epoch_regions() const override { return inner_->epoch_regions(); }
  Status CheckInvariants() const override { return inner_->CheckInvariants(); }

 private:
  void Emit(const TraceEvent& e) { sink_(FormatTraceEvent(e)); }

  std::unique_ptr<cache::Policy> inner_;
  TraceSink sink_;
};

}  // namespace

std::unique_ptr<cache::Policy> MakeRecordingPolicy(std::unique_ptr<cache::Policy> inner,
                                                   TraceSink sink, RecordedParams params) {
  return std::make_unique<RecordingPolicy>(std::move(inner), std::move(sink), params);
}

}  // namespace epochfs::trace
