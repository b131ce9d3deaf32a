// StatsJson: the document .epochfs/stats serves, from the parts' counters:
// the cache front and its policy (jobs, pool, cache need), the lower's gate and
// read slots, the spill area, the memory governor, and the warnings.
// Thread safety: as the parts' own readers (counters and ReadPolicy); called
// from the FUSE threads.
#pragma once

#include <string>
#include <vector>

#include "epochfs/store/cache_front.h"
#include "epochfs/store/known_lower.h"
#include "epochfs/store/lower.h"
#include "memory_governor.h"
#include "spill_area.h"

namespace epochfs {

// `spill` and `governor` may be null (no spill area; a fixed budget).
// `fixed` are the warnings said once at start (a fixed budget too large).
std::string StatsJson(const std::string& mountpoint, store::CacheFront& cf, const store::Lower& lower,
                      const store::KnownLower& known, const SpillArea* spill,
                      const MemoryGovernor* governor, const std::vector<std::string>& fixed);

}  // namespace epochfs
