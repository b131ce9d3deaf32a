#include "epochfs/cache/decision_apply.h"

namespace epochfs::cache {

Applied ApplyDecision(const Decision& d, std::optional<ObjectId> loaded, Policy& policy,
                      DecisionTarget& store) {
  Applied out;
  for (ObjectId victim : d.evict) {
    if (store.Evict(victim)) ++out.evicted;
  }
  if (!d.admit || !loaded.has_value()) return out;
  switch (store.Admit(*loaded)) {
    case DecisionTarget::Admission::kAdmitted:
      out.admitted = true;
      break;
    case DecisionTarget::Admission::kRefused:
      out.refused = true;
      policy.OnDropped(*loaded);
      break;
    case DecisionTarget::Admission::kPresent:
      break;
  }
  return out;
}

}  // namespace epochfs::cache
