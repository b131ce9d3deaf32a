// OpenDiskTierOf: the disk tier's options from the config (cache.disk_*), and
// a spill area on the same filesystem counted against "auto"
// (docs/disk_tier.md). Opens (checks, locks, reads the index); the caller
// Starts it after daemonizing.
// Thread safety: call once, at build time. `spill` (may be null) must outlive
// the tier.
#pragma once

#include <memory>

#include "epochfs/config/config.h"
#include "epochfs/tier/disk_tier.h"
#include "spill_area.h"

namespace epochfs {

Result<std::unique_ptr<tier::DiskTier>> OpenDiskTierOf(const Config& cfg, SpillArea* spill);

}  // namespace epochfs
