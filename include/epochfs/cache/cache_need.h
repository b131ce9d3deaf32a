// CacheNeed: how much cache the jobs need to hide their I/O, against the
// budget (seed 004: a job's memory need estimated from a measured first run).
//
// A job's need is measured at the end of its warm-up:
//   need_i = e_i · batches_i · mean sample size
// (the bytes that give e_i hits in every batch of an epoch; JobSnapshot
// need_bytes). The sum runs over the jobs still caching (state kCaching):
// a job in warm-up has no estimate yet, one in its last epoch or done caches
// nothing more. When the sum exceeds the budget, some job reads samples from
// lower storage that its compute cannot hide: `over` is set, Warning() says
// so without naming a job (the stats' `warnings`, which every user reads) and
// LogLine() says which jobs need what (the daemon's log).
//
// Pure function of a Policy's introspection; thread safety as the Policy's
// (call it under the lock that serialises the policy).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "epochfs/cache/policy.h"

namespace epochfs::cache {

struct CacheNeed {
  struct Job {
    JobId id = kNoJob;
    std::string name;
    uint64_t need_bytes = 0;
  };
  uint64_t budget_bytes = 0;
  uint64_t total_bytes = 0;  // Σ need over `jobs`
  std::vector<Job> jobs;     // the jobs counted, by id
  bool over = false;         // total_bytes > budget_bytes

  // "" when !over; else one line for the stats `warnings` array, naming no job
  // (another user's job names are not theirs to learn).
  std::string Warning() const;
  // "" when !over; else one line for the log, naming each job and its need.
  std::string LogLine() const;
};

CacheNeed SumCacheNeed(const Policy& policy);

}  // namespace epochfs::cache
