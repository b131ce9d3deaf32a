// PolicyView: what the control tree may read of the cache policy, for the
// `status` and `stats` files. Implemented by the daemon (which owns the policy
// and its lock). Thread safety: implementations are thread-safe; callers must
// not hold the registry mutex (lock order: registry → policy).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "epochfs/cache/policy.h"

namespace epochfs::control {

struct JobFigures {
  cache::JobSnapshot policy;                // the policy's figures for the job
  std::vector<cache::EpochCounters> epochs;  // every epoch begun so far, oldest first
  // Samples found unreadable on LOWER (missing, not a regular file, too large
  // to cache) when the daemon went to load them, and the first one, with why.
  uint64_t unreadable = 0;
  std::string first_unreadable;
};

class PolicyView {
 public:
  virtual ~PolicyView() = default;
  // Figures of job `id`, or nullopt when the policy does not know it (LRU, or
  // a job not configured yet).
  virtual std::optional<JobFigures> Figures(cache::JobId id) const = 0;
};

}  // namespace epochfs::control
