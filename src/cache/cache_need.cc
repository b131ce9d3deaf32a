#include "epochfs/cache/cache_need.h"

namespace epochfs::cache {

CacheNeed SumCacheNeed(const Policy& policy) {
  CacheNeed n;
  n.budget_bytes = policy.budget();
  for (const JobSnapshot& s : policy.Jobs()) {
    if (!s.started || !s.need_measured || s.state != JobState::kCaching) continue;
    n.jobs.push_back({s.id, s.name, s.need_bytes});
    n.total_bytes += s.need_bytes;
  }
  n.over = n.total_bytes > n.budget_bytes;
  return n;
}

std::string CacheNeed::Warning() const {
  if (!over) return "";
  return "cache need " + std::to_string(total_bytes) + " bytes of " + std::to_string(jobs.size()) +
         (jobs.size() == 1 ? " job" : " jobs") + " exceeds the budget " +
         std::to_string(budget_bytes) +
         " bytes: some reads of these jobs will wait for lower storage (each job's need: "
         "cache_need_bytes in its status)";
}

std::string CacheNeed::LogLine() const {
  if (!over) return "";
  std::string w = "cache need " + std::to_string(total_bytes) + " bytes exceeds the budget " +
                  std::to_string(budget_bytes) + " bytes (";
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (i > 0) w += ", ";
    w += jobs[i].name + " " + std::to_string(jobs[i].need_bytes);
  }
  w += "): some reads of these jobs will wait for lower storage";
  return w;
}

}  // namespace epochfs::cache
