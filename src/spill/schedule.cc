#include "epochfs/spill/schedule.h"

#include <algorithm>
#include <unordered_set>

namespace epochfs::spill {

SchedulePlan PlanAfterStep(const std::vector<std::string>& schedule, int64_t finished,
                           uint32_t num_prefetch, uint32_t num_writeout) {
  SchedulePlan plan;
  const size_t n = schedule.size();
  if (n == 0) return plan;
  // The step after `finished`, cyclically.
  const size_t first = static_cast<size_t>(finished + 1) % n;
  std::unordered_set<std::string> keep;  // prefetch window ∪ write-out window
  std::unordered_set<std::string> fetched;
  const size_t horizon = std::min<size_t>(std::max(num_prefetch, num_writeout), n);
  for (size_t i = 0; i < horizon; ++i) {
    const std::string& f = schedule[(first + i) % n];
    keep.insert(f);
    if (i < num_prefetch && fetched.insert(f).second) plan.prefetch.push_back(f);
  }
  std::unordered_set<std::string> seen;
  for (const std::string& f : schedule) {
    if (keep.count(f) == 0 && seen.insert(f).second) plan.writeout.push_back(f);
  }
  return plan;
}

}  // namespace epochfs::spill
