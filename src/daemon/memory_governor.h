// MemoryGovernor: the daemon's thread for cache.memory = "auto".
//
// Every cache.governor_interval it reads the memory figures (governor::Sampler),
// feeds them with the cache's resident bytes to the model
// (governor::MemoryModel, docs/governor.md) and applies the budget the model
// gives through CacheFront::SetBudget (policy-chosen evictions, kernel page
// cache copies dropped through the DropListener). After a shrink that evicted
// something it returns freed heap pages to the kernel (malloc_trim), so that
// the memory the budget gave up is really available to others.
//
// The horizon of the prediction is the jobs' expected end (the longest of
// cache::ExpectedRemainingNs over the policy's jobs) when one is known.
//
// Thread safety: Initial() and Attach() before Start(), from one thread;
// StatsJson() from any thread; Start()/Stop() from one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>

#include "epochfs/config/config.h"
#include "epochfs/governor/memory_model.h"
#include "epochfs/governor/sampler.h"
#include "epochfs/store/cache_front.h"
#include "ticker.h"

namespace epochfs {

class MemoryGovernor {
 public:
  explicit MemoryGovernor(const Config& cfg);
  ~MemoryGovernor() { Stop(); }
  MemoryGovernor(const MemoryGovernor&) = delete;
  MemoryGovernor& operator=(const MemoryGovernor&) = delete;

  // The budget at mount: the model's answer to the first sample (empty
  // cache). IoError when memory cannot be read at all.
  Result<uint64_t> Initial();
  // REQUIRES: before Start(); `cache` outlives this governor's thread.
  void Attach(store::CacheFront* cache) { cache_ = cache; }
  void Start();
  void Stop();

  // The "governor" object of .epochfs/stats.
  nlohmann::json StatsJson() const;

 private:
  // One sample, one estimate, one budget change at most.
  void Tick();
  // REQUIRES: mu_ held.
  const governor::Estimate& AddLocked(const governor::MemoryReading& r, uint64_t cache_bytes,
                                      uint64_t horizon_ns, uint64_t now_ns);

  const Config& cfg_;
  const governor::Sampler sampler_;
  store::CacheFront* cache_ = nullptr;
  const uint64_t start_ns_;

  mutable std::mutex mu_;  // guards everything below (never held across SetBudget)
  governor::MemoryModel model_;
  governor::MemoryReading last_reading_;
  struct Sample {
    uint64_t t_ns, total, available, cache, non_cache;
  };
  std::deque<Sample> samples_;  // the last kKeepSamples
  struct Change {
    uint64_t t_ns, budget;
    bool urgent;
  };
  std::deque<Change> history_;  // the last kKeepChanges budget changes
  uint64_t ticks_ = 0;
  uint64_t read_errors_ = 0;
  uint64_t shrinks_ = 0;
  uint64_t grows_ = 0;
  uint64_t evicted_ = 0;
  uint64_t applied_budget_ = 0;

  Ticker ticker_;  // last: stopped before the members Tick uses
};

}  // namespace epochfs
