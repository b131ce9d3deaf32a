#include "disk_tier_setup.h"

#include <sys/stat.h>

#include <chrono>

namespace epochfs {

namespace {

tier::DiskTierOptions OptionsOf(const Config& cfg, SpillArea* spill) {
  tier::DiskTierOptions o;
  o.path = cfg.cache.disk_path;
  o.size = cfg.cache.disk_size;
  o.size_auto = cfg.cache.disk_size_auto;
  o.margin_is_percent = cfg.cache.disk_margin.is_percent;
  o.margin = cfg.cache.disk_margin.bytes;
  o.margin_percent = cfg.cache.disk_margin.percent;
  // Each disk call is bounded by cache.disk_timeout: past it the disk is
  // taken for one that stopped answering and the tier fails.
  o.timeout = std::chrono::milliseconds(static_cast<int64_t>(cfg.cache.disk_timeout * 1000.0));
  o.start_timeout = o.timeout;  // its start too: a disk hung at start keeps no mount
  // A spill area on the same filesystem keeps its own bound: what it may
  // still take is not the tier's.
  struct stat a, b;
  if (spill != nullptr && cfg.spill.max_bytes != 0 && ::stat(o.path.c_str(), &a) == 0 &&
      ::stat(cfg.spill.path.c_str(), &b) == 0 && a.st_dev == b.st_dev) {
    const uint64_t bound = cfg.spill.max_bytes;
    o.reserved = [spill, bound]() -> uint64_t {
      const uint64_t held = spill->store() != nullptr ? spill->store()->stats().stored_bytes : 0;
      return bound > held ? bound - held : 0;
    };
  }
  return o;
}

}  // namespace

Result<std::unique_ptr<tier::DiskTier>> OpenDiskTierOf(const Config& cfg, SpillArea* spill) {
  return tier::DiskTier::Open(OptionsOf(cfg, spill));
}

std::unique_ptr<tier::DiskTier> FailedDiskTierOf(const Config& cfg, const std::string& why) {
  return tier::DiskTier::FailedAtStart(OptionsOf(cfg, nullptr), why);
}

}  // namespace epochfs
