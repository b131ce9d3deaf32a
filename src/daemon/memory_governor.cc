#include "memory_governor.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "epochfs/cache/policy.h"
#include "epochfs/common/log.h"
#include "epochfs/store/byte_pool.h"

namespace epochfs {
namespace {

constexpr size_t kKeepSamples = 120;
constexpr size_t kKeepChanges = 64;

governor::ModelParams ParamsFrom(const Config& cfg) {
  governor::ModelParams p;
  p.window_ns = static_cast<uint64_t>(cfg.cache.governor_window * 1e9);
  p.default_horizon_ns = static_cast<uint64_t>(cfg.cache.governor_horizon * 1e9);
  // Growth waits for ten samples' worth of steady targets, at least 2 s.
  p.grow_delay_ns = std::max<uint64_t>(2'000'000'000,
                                       static_cast<uint64_t>(cfg.cache.governor_interval * 10e9));
  return p;
}

double Seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

MemoryGovernor::MemoryGovernor(const Config& cfg)
    : cfg_(cfg), start_ns_(store::NowNs()), model_(ParamsFrom(cfg)) {}

const governor::Estimate& MemoryGovernor::AddLocked(const governor::MemoryReading& r,
                                                    uint64_t cache_bytes, uint64_t horizon_ns,
                                                    uint64_t now_ns) {
  const uint64_t min = cfg_.cache.memory_min.Of(r.total);
  const uint64_t max = std::max(min, cfg_.cache.memory_max.Of(r.total));
  model_.SetBounds(cfg_.cache.memory_margin.Of(r.total), min, max);
  last_reading_ = r;
  const governor::Estimate& e =
      model_.Add({now_ns, r.total, r.available, cache_bytes}, horizon_ns);
  samples_.push_back({now_ns, e.total_bytes, e.available_bytes, e.cache_bytes, e.non_cache_bytes});
  if (samples_.size() > kKeepSamples) samples_.pop_front();
  return e;
}

Result<uint64_t> MemoryGovernor::Initial() {
  Result<governor::MemoryReading> r = sampler_.Read();
  if (!r.ok()) return r.status();
  std::lock_guard lock(mu_);
  const governor::Estimate& e = AddLocked(r.value(), 0, 0, store::NowNs());
  applied_budget_ = e.budget_bytes;
  history_.push_back({e.t_ns, e.budget_bytes, false});
  return e.budget_bytes;
}

void MemoryGovernor::Tick() {
  Result<governor::MemoryReading> r = sampler_.Read();
  if (!r.ok()) {
    std::lock_guard lock(mu_);
    if (read_errors_++ == 0) log::Warn("memory governor: " + r.status().message());
    return;
  }
  uint64_t horizon = 0;
  cache_->ReadPolicy([&horizon](const cache::Policy& p) {
    for (const cache::JobSnapshot& s : p.Jobs()) {
      horizon = std::max(horizon, cache::ExpectedRemainingNs(s));
    }
  });
  // The bytes the daemon itself holds: objects handed over to the kernel's
  // page cache (fuse.one_copy) are reclaimable page cache, which the sample
  // already counts as available; subtracting them too would take that much
  // of the other processes' memory for cache and raise the budget past what
  // fits.
  const uint64_t cache_bytes = cache_->ram().used() - std::min(cache_->ram().used(),
                                                               cache_->ram().handed_bytes());
  uint64_t budget = 0, old = 0;
  bool urgent = false;
  {
    std::lock_guard lock(mu_);
    ++ticks_;
    const governor::Estimate& e = AddLocked(r.value(), cache_bytes, horizon, store::NowNs());
    budget = e.budget_bytes;
    urgent = e.urgent;
    old = applied_budget_;
  }
  if (budget == old) return;
  Result<uint64_t> evicted = cache_->SetBudget(budget);
  if (!evicted.ok()) {
    std::lock_guard lock(mu_);
    if (read_errors_++ == 0) log::Warn("memory governor: " + evicted.status().message());
    return;
  }
  // Evicted objects' heap pages go back to the kernel now, not at the next
  // allocation (objects still open by a reader are freed at their release).
  if (budget < old) {
    store::FreeKeptBuffers();  // the few kept for the next loads too
    ::malloc_trim(0);
  }
  {
    std::lock_guard lock(mu_);
    applied_budget_ = budget;
    (budget < old ? shrinks_ : grows_)++;
    evicted_ += evicted.value();
    history_.push_back({store::NowNs(), budget, urgent});
    if (history_.size() > kKeepChanges) history_.pop_front();
  }
  const std::string msg = "memory governor: budget " + std::to_string(old >> 20) + " -> " +
                          std::to_string(budget >> 20) + " MiB (" +
                          std::to_string(evicted.value()) + " objects evicted" +
                          (urgent ? ", urgent)" : ")");
  const uint64_t delta = budget > old ? budget - old : old - budget;
  if (urgent || delta >= (64ull << 20)) {
    log::Info(msg);
  } else {
    log::Debug(msg);
  }
}

void MemoryGovernor::Start() {
  // A fixed mmap threshold (the default 128 KiB, without glibc's dynamic
  // raise after frees): cached objects above it live in their own mappings
  // and go back to the kernel the moment they are freed.
  ::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  const auto interval = std::chrono::nanoseconds(
      static_cast<int64_t>(cfg_.cache.governor_interval * 1e9));
  ticker_.Start(interval, [this] { Tick(); });
}

void MemoryGovernor::Stop() { ticker_.Stop(); }

nlohmann::json MemoryGovernor::StatsJson() const {
  std::lock_guard lock(mu_);
  const governor::Estimate& e = model_.last();
  const governor::ModelParams& p = model_.params();
  nlohmann::json j;
  j["interval_s"] = cfg_.cache.governor_interval;
  j["ticks"] = ticks_;
  j["read_errors"] = read_errors_;
  j["total"] = e.total_bytes;
  j["available"] = e.available_bytes;
  j["cache"] = e.cache_bytes;
  j["non_cache"] = e.non_cache_bytes;
  j["fit"] = {{"n", e.fit.n},
              {"slope_bytes_per_s", e.fit.slope},
              {"slope_stderr", e.fit.slope_stderr},
              {"intercept_bytes", e.fit.intercept},
              {"residual_stddev", e.fit.residual_stddev},
              {"plateau", e.fit.plateau},
              {"window_s", Seconds(p.window_ns)}};
  j["horizon_s"] = Seconds(e.horizon_ns);
  j["predicted_peak"] = e.predicted_peak_bytes;
  j["target"] = e.target_bytes;
  j["budget"] = applied_budget_;
  j["urgent"] = e.urgent;
  j["margin"] = p.margin_bytes;
  j["min"] = p.min_bytes;
  j["max"] = p.max_bytes;
  j["shrinks"] = shrinks_;
  j["grows"] = grows_;
  j["evicted_objects"] = evicted_;
  j["cgroup"] = {{"dir", last_reading_.cgroup_dir},
                 {"limited", last_reading_.cgroup_limited},
                 {"limit", last_reading_.cgroup_limit},
                 {"usage", last_reading_.cgroup_usage},
                 {"inactive_file", last_reading_.cgroup_inactive_file}};
  j["meminfo"] = {{"total", last_reading_.mem_total},
                  {"available", last_reading_.mem_available}};
  nlohmann::json samples = nlohmann::json::array();
  for (const Sample& s : samples_) {
    samples.push_back({{"t", Seconds(s.t_ns - std::min(s.t_ns, start_ns_))},
                       {"total", s.total},
                       {"available", s.available},
                       {"cache", s.cache},
                       {"non_cache", s.non_cache}});
  }
  j["samples"] = samples;
  nlohmann::json hist = nlohmann::json::array();
  for (const Change& c : history_) {
    hist.push_back({{"t", Seconds(c.t_ns - std::min(c.t_ns, start_ns_))},
                    {"budget", c.budget},
                    {"urgent", c.urgent}});
  }
  j["budget_history"] = hist;
  return j;
}

}  // namespace epochfs
