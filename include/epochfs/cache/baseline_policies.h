// Baseline policies for the simulator and the replay, behind the same Policy
// interface as the daemon's policies, so that the engine treats every policy
// alike (built by MakePolicy, cache/policy_factory.h):
//
//   none:   caches nothing (every access goes to storage);
//   minio:  CoorDL's MinIO cache: admits every miss while it fits, never evicts;
//   belady: the offline optimum over the declared orders: on a miss it keeps
//           the objects whose next use comes soonest (Belady's MIN, with
//           bypass: the missed object itself is not admitted when it would be
//           the first to go). Needs the future, asked from a Future.
//
// Belady runs cache::NextUseCache (shared with the daemon's "future" policy)
// over the oracle's future. With sizes: for equal sizes, evicting the object used furthest in the
// future (and bypassing when that is the new object) maximises hits on a given
// access sequence (MIN). For varied sizes the exact problem is NP-hard; this
// is a size-aware heuristic: evict the object with the largest
// (time to next use) × size / (size + request_bytes), i.e. the one that saves
// the least store time per byte held (NextUseCache). Objects are grouped by the
// job that reads them next and by size class (4 per power of two); within a
// group the furthest position goes first, and the groups' candidates are
// compared on that rank, with the time to next use estimated from the job's
// position and pace (Future::Estimate).
// With one job and equal sizes (one group) it is exactly MIN; across jobs the
// estimate makes it a heuristic (the interleaving of jobs depends on the
// cache itself).
//
// Belady's disk tier (tier_placement(), the simulator's two-tier reference):
// the same rule over the same oracle, as the future policy's FutureTier runs
// it over the declared future: a NextUseCache of the disk's bytes (request
// cost 0: the disk's requests are cheap), a loaded object written when its
// next use comes sooner than that of something the disk holds, never when it
// would itself be the first to go; inclusive of RAM, as the daemon's tiers.
// So RAM holds the soonest next uses, the disk the soonest within its larger
// size, and what lies beyond is not kept.
//
// Thread safety: not thread-safe, like every Policy.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>

#include "epochfs/cache/future.h"
#include "epochfs/cache/policy.h"

namespace epochfs::cache {

std::unique_ptr<Policy> MakeNoCachePolicy(uint64_t budget_bytes);
std::unique_ptr<Policy> MakeMinioPolicy(uint64_t budget_bytes);
// `future` (the oracle: the simulator engine's, or a trace's own) must
// outlive the policy. `request_bytes`: the store's cost per request, as the
// future policy's (FuturePolicyParams::request_bytes).
std::unique_ptr<Policy> MakeBeladyPolicy(uint64_t budget_bytes, const Future& future,
                                         uint64_t request_bytes);

}  // namespace epochfs::cache
