// Prefetching: the optional part of a Policy that loads objects ahead of
// their reads. A policy that has it returns it from Policy::prefetching();
// the others return nullptr, and then nothing is prefetched for them (the
// daemon's prefetcher and the simulator ask for no hints, and an object
// loaded ahead anyway is admitted by none). Only a policy with a declared
// future (the "future" policy) has it.
//
// Ownership: part of the policy object; lives as long as it.
// Thread safety: not thread-safe, like the Policy it belongs to (the caller
// serialises every call with the policy's others).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "epochfs/cache/policy.h"

namespace epochfs::cache {

class Prefetching {
 public:
  virtual ~Prefetching() = default;
  // Up to `max` objects, soonest read first, that are not resident, not
  // `skip`ped, and that OnPrefetched would admit once `loading` (the caller's
  // prefetches in flight: object and size; `skip` names them too) and the
  // hints before them have landed (an estimate: OnPrefetched decides).
  virtual std::vector<PrefetchHint> PrefetchHints(size_t max, uint64_t now_ns,
                                                  const std::function<bool(ObjectId)>& skip,
                                                  const std::vector<PrefetchHint>& loading) = 0;
  // Up to `max` objects per job, in the order each job reads them, that are
  // declared and not resident, not `skip`ped, and that PrefetchHints would
  // not return now (the policy would not admit them, or no load ahead has
  // room): their attributes may be fetched ahead of their reads (a stat, no
  // bytes), so that the reader's lookup waits for no LOWER call. The default:
  // none.
  virtual std::vector<PrefetchHint> StatHints(size_t max, uint64_t now_ns,
                                              const std::function<bool(ObjectId)>& skip,
                                              const std::vector<PrefetchHint>& loading) {
    (void)max, (void)now_ns, (void)skip, (void)loading;
    return {};
  }
  // `a.object` was loaded ahead of any read of it (in load_ns). Admitted or
  // not as a miss would be, but nobody has read it: no job's position or
  // counters move. REQUIRES: not resident.
  virtual Decision OnPrefetched(const Access& a, uint64_t load_ns) = 0;
};

}  // namespace epochfs::cache
