// Baseline policies for the simulator, behind the same cache::Policy interface
// as the daemon's policies, so that the engine treats every policy alike:
//
//   none:   caches nothing (every access goes to storage);
//   minio:  CoorDL's MinIO cache: admits every miss while it fits, never evicts;
//   belady: the offline optimum over the declared orders: on a miss it keeps
//           the objects whose next use comes soonest (Belady's MIN, with
//           bypass: the missed object itself is not admitted when it would be
//           the first to go). Needs the future, asked from a Future.
//
// Belady with sizes: for equal sizes, evicting the object used furthest in the
// future (and bypassing when that is the new object) maximises hits on a given
// access sequence (MIN). For varied sizes the exact problem is NP-hard; this
// is the standard size-aware heuristic: evict the object with the largest
// (time to next use) × size, i.e. the one that holds the most byte-time per
// future hit. Objects are grouped into size classes (4 per power of two); the
// furthest-next-use object of each class is compared on that product, so with
// equal sizes (one class) it is exactly MIN.
//
// Thread safety: not thread-safe, like every Policy.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>

#include "epochfs/cache/policy.h"

namespace epochfs::sim {

// The future, as the simulator engine knows it: when will `object` next be read?
class Future {
 public:
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
  virtual ~Future() = default;
  // Estimated time (ns) of the next read of `object` by any job, not counting
  // the reads already issued; kNever when no job reads it again. The estimate
  // for a given future read must not change while no job reads the object
  // (the Belady policy keeps it as a key until the object is read again).
  virtual uint64_t NextUse(cache::ObjectId object) const = 0;
};

std::unique_ptr<cache::Policy> MakeNoCachePolicy(uint64_t budget_bytes);
std::unique_ptr<cache::Policy> MakeMinioPolicy(uint64_t budget_bytes);
// `future` must outlive the policy.
std::unique_ptr<cache::Policy> MakeBeladyPolicy(uint64_t budget_bytes, const Future& future);

}  // namespace epochfs::sim
