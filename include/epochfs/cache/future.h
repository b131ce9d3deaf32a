// Future: who reads an object next, and when is that likely to be?
//
// The question behind every next-use cache (NextUseCache): the simulator's
// oracle answers it from the whole trace (Belady's bound, sim/), the daemon's
// "future" policy from what the jobs declared (DeclaredFuture). Objects are
// numbered densely for the cache's tables (Slot); jobs are indices
// 0..Jobs()−1 of the answerer's own.
//
// Thread safety: as the owner's; the cache calls it under its caller's lock.
#pragma once

#include <cstddef>
#include <cstdint>

#include "epochfs/cache/policy.h"

namespace epochfs::cache {

class Future {
 public:
  // A future read: job index and position in that job's reads (positions of
  // one job grow with time; different jobs' positions are not comparable).
  struct Use {
    uint32_t job = 0;
    uint64_t pos = 0;
  };
  virtual ~Future() = default;
  // Slot(o) < Slots() for every object the cache is asked about.
  virtual size_t Slots() const = 0;
  virtual size_t Slot(ObjectId object) const = 0;
  // The next read of `object` not issued yet, by the job whose read comes
  // first by Estimate(); false when no job reads it again. It stays the same
  // until some job reads the object (or the answerer says otherwise).
  virtual bool NextUse(ObjectId object, Use* out) const = 0;
  // The next read of `object` at its declared place, for the prefetch rule
  // (NextUseCache::Admissible): NextUse may file a read at an estimated
  // place (the declared future spreads the next epoch's reads over it); this
  // one is where the read is declared to come. The oracle's: NextUse.
  virtual bool DeclaredUse(ObjectId object, Use* out) const { return NextUse(object, out); }
  // How a job's future reads map to times at `now`: the read at position pos
  // is estimated at max(floor, origin + max(0, pos − done) · pace). `worth`
  // (0 < worth <= 1): what a hit of the job saves, relative to a job whose
  // loaders wait on storage all the time (1; the oracle's, and a job not
  // measured yet).
  struct Line {
    uint64_t origin = 0;
    uint64_t done = 0;
    double pace = 0;
    uint64_t floor = 0;
    double worth = 1.0;
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

}  // namespace epochfs::cache
