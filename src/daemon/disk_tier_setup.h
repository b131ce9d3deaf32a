// OpenDiskTierOf: the disk tier's options from the config (cache.disk_*), and
// a spill area on the same filesystem counted against "auto"
// (docs/disk_tier.md). Opens (checks, locks, reads the index; TimedOut when
// that start does not answer within cache.disk_timeout); the caller Starts
// it. FailedDiskTierOf: the failed tier the mount shows instead then.
// Thread safety: call once, at build time. `spill` (may be null) must outlive
// the tier.
#pragma once

#include <memory>

#include "epochfs/config/config.h"
#include "epochfs/tier/disk_tier.h"
#include "spill_area.h"

namespace epochfs {

Result<std::unique_ptr<tier::DiskTier>> OpenDiskTierOf(const Config& cfg, SpillArea* spill);
std::unique_ptr<tier::DiskTier> FailedDiskTierOf(const Config& cfg, const std::string& why);

}  // namespace epochfs
