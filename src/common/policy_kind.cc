#include "epochfs/common/policy_kind.h"

namespace epochfs {

std::vector<PolicyKind> AllPolicyKinds() {
  return {PolicyKind::kNone, PolicyKind::kLru, PolicyKind::kMinio, PolicyKind::kEpoch,
          PolicyKind::kFuture, PolicyKind::kBelady};
}

Result<PolicyKind> ParsePolicyKind(const std::string& name) {
  for (PolicyKind k : AllPolicyKinds()) {
    if (name == PolicyKindName(k)) return k;
  }
  return InvalidArgument("unknown policy '" + name + "' (none, lru, minio, epoch, future, belady)");
}

}  // namespace epochfs
