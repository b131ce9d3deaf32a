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
// future hit. Objects are grouped by the job that reads them next and by size
// class (4 per power of two); within a group the furthest position goes first,
// and the groups' candidates are compared on that product, with the time to
// next use estimated from the job's position and pace (Future::Estimate).
// With one job and equal sizes (one group) it is exactly MIN; across jobs the
// estimate makes it a heuristic (the interleaving of jobs depends on the
// cache itself).
//
// Thread safety: not thread-safe, like every Policy.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>

#include "epochfs/cache/policy.h"

namespace epochfs::sim {

// The future, as the simulator engine knows it: who reads `object` next, and
// when is that likely to be?
class Future {
 public:
  // A future read: job index and position in that job's reads (epoch·N + i).
  struct Use {
    uint32_t job = 0;
    uint64_t pos = 0;
  };
  virtual ~Future() = default;
  // Objects are numbered densely for the policy's tables: Slot(o) < Slots().
  virtual size_t Slots() const = 0;
  virtual size_t Slot(cache::ObjectId object) const = 0;
  // The next read of `object` not issued yet, by the job whose read comes
  // first by Estimate(); false when no job reads it again. It stays the same
  // until some job reads the object.
  virtual bool NextUse(cache::ObjectId object, Use* out) const = 0;
  // How a job's future reads map to times at `now`: the read at position pos
  // is estimated at max(floor, origin + max(0, pos − done) · pace).
  struct Line {
    uint64_t origin = 0;
    uint64_t done = 0;
    double pace = 0;
    uint64_t floor = 0;
    uint64_t At(uint64_t pos) const {
      const uint64_t ahead = pos > done ? pos - done : 0;
      const uint64_t t = origin + static_cast<uint64_t>(double(ahead) * pace);
      return t > floor ? t : floor;
    }
  };
  virtual size_t Jobs() const = 0;
  virtual Line LineOf(uint32_t job, uint64_t now) const = 0;
  // Estimated time (ns, >= now) of `use`, from the job's position and pace.
  uint64_t Estimate(const Use& use, uint64_t now) const { return LineOf(use.job, now).At(use.pos); }
};

std::unique_ptr<cache::Policy> MakeNoCachePolicy(uint64_t budget_bytes);
std::unique_ptr<cache::Policy> MakeMinioPolicy(uint64_t budget_bytes);
// `future` must outlive the policy.
std::unique_ptr<cache::Policy> MakeBeladyPolicy(uint64_t budget_bytes, const Future& future);

}  // namespace epochfs::sim
