// MakePolicy: the one place a Policy is built from its kind and parameters.
//
// The daemon (from its Config), the simulator engine (from a workload) and the
// replay (from a trace's "start") each fill PolicyParams from their own source
// and call MakePolicy, so that a policy is built the same way everywhere and a
// new policy or parameter is added once.
//
// Ownership: the caller owns the returned policy. `oracle` is borrowed: it
// must outlive a belady policy (the only one that reads it).
// Thread safety: reentrant.
#pragma once

#include <cstdint>
#include <memory>

#include "epochfs/cache/epoch_policy.h"
#include "epochfs/cache/future.h"
#include "epochfs/cache/future_policy.h"
#include "epochfs/cache/policy.h"
#include "epochfs/common/policy_kind.h"

namespace epochfs::cache {

struct PolicyParams {
  PolicyKind kind = PolicyKind::kFuture;
  uint64_t budget_bytes = 0;  // every policy's; overrides epoch/future.budget_bytes
  EpochPolicyParams epoch;    // kEpoch
  FuturePolicyParams future;  // kFuture; future.request_bytes is belady's too
  const Future* oracle = nullptr;  // kBelady: REQUIRED (the offline future)
};

// InvalidArgument when kind is kBelady and there is no oracle.
Result<std::unique_ptr<Policy>> MakePolicy(const PolicyParams& params);

}  // namespace epochfs::cache
