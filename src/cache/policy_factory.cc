#include "epochfs/cache/policy_factory.h"

#include "epochfs/cache/baseline_policies.h"

namespace epochfs::cache {

Result<std::unique_ptr<Policy>> MakePolicy(const PolicyParams& params) {
  switch (params.kind) {
    case PolicyKind::kNone:
      return MakeNoCachePolicy(params.budget_bytes);
    case PolicyKind::kLru:
      return MakeLruPolicy(params.budget_bytes);
    case PolicyKind::kMinio:
      return MakeMinioPolicy(params.budget_bytes);
    case PolicyKind::kBelady:
      if (params.oracle == nullptr) return InvalidArgument("belady needs the future (an oracle)");
      return MakeBeladyPolicy(params.budget_bytes, *params.oracle, params.future.request_bytes);
    case PolicyKind::kFuture: {
      FuturePolicyParams p = params.future;
      p.budget_bytes = params.budget_bytes;
      return MakeFuturePolicy(p);
    }
    case PolicyKind::kEpoch: {
      EpochPolicyParams p = params.epoch;
      p.budget_bytes = params.budget_bytes;
      return MakeEpochPolicy(p);
    }
  }
  return InvalidArgument("unknown policy kind");
}

}  // namespace epochfs::cache
