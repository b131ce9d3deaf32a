// PolicyKind: the cache policies by name, the one list that the
// configuration (cache.policy), the daemon, the simulator and the replay share.
//
// The daemon runs lru, epoch and future (config accepts those three); the
// simulator and the replay run all six, the baselines none, minio and belady
// included. cache::MakePolicy (cache/policy_factory.h) builds each.
// Thread safety: pure functions and constants.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs {

enum class PolicyKind : uint8_t { kNone, kLru, kMinio, kEpoch, kFuture, kBelady };

// "none", "lru", "minio", "epoch", "future", "belady" (the policies' name()).
constexpr const char* PolicyKindName(PolicyKind k) {
  switch (k) {
    case PolicyKind::kNone:
      return "none";
    case PolicyKind::kLru:
      return "lru";
    case PolicyKind::kMinio:
      return "minio";
    case PolicyKind::kEpoch:
      return "epoch";
    case PolicyKind::kFuture:
      return "future";
    case PolicyKind::kBelady:
      return "belady";
  }
  return "?";
}
// Parses one name of the six; InvalidArgument for anything else.
Result<PolicyKind> ParsePolicyKind(const std::string& name);
// Every policy, in report order.
std::vector<PolicyKind> AllPolicyKinds();

}  // namespace epochfs
