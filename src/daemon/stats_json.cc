#include "stats_json.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "epochfs/cache/cache_need.h"
#include "epochfs/cache/policy.h"

namespace epochfs {

namespace {

// A histogram as the stats carry it (control/metrics_text.h reads it):
// bounds and sum in seconds, cumulative counts.
nlohmann::json HistogramJson(const Histogram::Reading& r) {
  nlohmann::json le = nlohmann::json::array(), cum = nlohmann::json::array();
  for (size_t i = 0; i < Histogram::kBuckets; ++i) {
    le.push_back(static_cast<double>(Histogram::kBoundsNs[i]) / 1e9);
    cum.push_back(r.cumulative[i]);
  }
  return {{"le", le},
          {"cumulative", cum},
          {"count", r.count},
          {"sum", static_cast<double>(r.sum_ns) / 1e9}};
}

}  // namespace

std::string StatsJson(const std::string& mountpoint, store::CacheFront& cf, const store::Lower& lower,
                      const store::KnownLower& known, const SpillArea* spill,
                      const MemoryGovernor* governor, const std::vector<std::string>& fixed) {
  const store::CacheCounters c = cf.counters();
  nlohmann::json j;
  j["version"] = EPOCHFS_VERSION;
  j["mountpoint"] = mountpoint;
  j["policy"] = cf.policy_name();
  j["budget"] = cf.ram().budget();
  j["used"] = cf.ram().used();
  j["objects"] = cf.ram().objects();
  j["hits"] = c.hits;
  j["misses"] = c.misses;
  j["coalesced"] = c.coalesced;
  j["bytes_read_lower"] = c.bytes_read_lower;
  j["admissions"] = c.admissions;
  j["evictions"] = c.evictions;
  j["refused"] = c.refused;
  j["invalidations"] = c.invalidations;
  j["lower_errors"] = c.lower_errors;
  j["streamed_opens"] = c.streamed_opens;
  j["streamed_bytes"] = c.streamed_bytes;
  j["prefetched"] = c.prefetched;
  j["prefetch_bytes"] = c.prefetch_bytes;
  j["prefetch_hits"] = c.prefetch_hits;
  j["prefetch_wasted"] = c.prefetch_wasted;
  j["handovers"] = c.handovers;
  j["refills"] = c.refills;
  j["refill_bytes"] = c.refill_bytes;
  const store::LowerGateCounters g = lower.gate_counters();
  j["lower_timeouts"] = g.timeouts;
  j["lower_interrupts"] = g.interrupts;
  j["lower_stuck"] = g.stuck;
  j["lower_in_flight"] = g.in_flight;
  j["lower_calls"] = g.calls;
  j["lower_inline_calls"] = g.inline_calls;
  // What LOWER was asked, by kind (store/lower_health.h): on a hot epoch
  // under "immutable", lookups, stats, opens and reads stay still.
  const store::LowerCallCounts calls = lower.health().counts();
  for (size_t k = 0; k < store::kLowerCallKinds; ++k) {
    j["lower_calls_by_kind"][store::LowerCallName(static_cast<store::LowerCall>(k))] =
        calls.by_kind[k];
  }
  j["lower_down"] = lower.health().down();
  j["lower_down_seconds"] = lower.health().down_seconds();
  const store::KnownLowerCounters known_c = known.counters();
  j["known_paths"] = known_c.paths;
  j["known_names"] = known_c.names;
  j["known_answers"] = known_c.answered;
  j["known_last_known"] = known_c.last_known;
  j["known_full"] = known_c.full;
  j["stat_ahead"] = known_c.ahead;
  const store::ReadSlotsCounters rs = cf.read_slots_counters();
  j["read_waits"] = rs.waits;
  j["read_wait_ms"] = rs.wait_ns / 1'000'000;
  j["read_aged"] = rs.aged;
  j["read_waiting"] = rs.waiting;
  j["max_object_bytes"] = cf.max_object_bytes();
  j["request_bytes"] = cf.request_bytes();
  // The cached objects by where their bytes are: the daemon's RAM, or the
  // kernel's page cache (handed over, fuse.one_copy); `objects` and `used`
  // count both.
  const uint64_t k_objects = cf.ram().handed_objects(), k_bytes = cf.ram().handed_bytes();
  const uint64_t objects = cf.ram().objects(), used = cf.ram().used();
  j["tiers"]["ram"] = {{"objects", objects - std::min(objects, k_objects)},
                       {"bytes", used - std::min(used, k_bytes)}};
  j["tiers"]["kernel"] = {{"objects", k_objects}, {"bytes", k_bytes}};
  nlohmann::json jobs = nlohmann::json::array();
  nlohmann::json warnings = nlohmann::json::array();
  if (const store::SecondTier* disk = cf.second_tier(); disk != nullptr) {
    const store::TierStats t = disk->stats();
    j["tiers"]["disk"] = {{"bytes", t.bytes},
                          {"objects", t.objects},
                          {"budget", t.budget},
                          {"hits", c.tier_hits},
                          {"reads_bytes", t.reads_bytes},
                          {"writes", t.writes},
                          {"writes_bytes", t.writes_bytes},
                          {"skipped", c.tier_skipped},
                          {"checksum_errors", t.checksum_errors},
                          {"stale", t.stale},
                          {"write_errors", t.write_errors},
                          {"index_bytes", t.index_bytes},
                          {"queued_bytes", t.queued_bytes},
                          {"state", t.state}};
    if (t.state == "failed") {
      warnings.push_back("the disk tier failed (an I/O error or no answer, see the log): reads "
                         "are served from RAM and LOWER");
    } else if (t.state == "full") {
      warnings.push_back("the disk tier's filesystem is full: it admits less and evicts");
    }
  }
  for (const std::string& w : fixed) warnings.push_back(w);
  if (c.streamed_opens != 0) {
    warnings.push_back(std::to_string(c.streamed_opens) +
                       " open(s) of files larger than max_object_bytes (" +
                       std::to_string(cf.max_object_bytes()) +
                       ": a quarter of cache.memory, at most 1 GiB) read them from LOWER "
                       "uncached (streamed_bytes): cache.block_size = 0; a block size "
                       "caches them in blocks");
  }
  cf.ReadPolicy([&](const cache::Policy& p) {
    j["pool"] = p.pool_bytes();
    j["shared"] = p.shared_bytes();
    j["resident"] = p.resident_bytes();
    const cache::CacheNeed need = cache::SumCacheNeed(p);
    j["need_total_bytes"] = need.total_bytes;
    if (need.over) warnings.push_back(need.Warning());
    for (const cache::JobSnapshot& s : p.Jobs()) {
      jobs.push_back({{"name", s.name},
                      {"id", s.id},
                      {"state", s.started ? cache::JobStateName(s.state) : "configured"},
                      {"epoch", s.epoch},
                      {"batch", s.batch},
                      {"cur_bytes", s.cur_bytes},
                      {"next_bytes", s.next_bytes},
                      {"tail_bytes", s.tail_bytes},
                      {"granted_unused_bytes", s.granted_unused_bytes},
                      {"hits", s.current.hits},
                      {"misses", s.current.misses},
                      {"coalesced", s.current.coalesced},  // waited: not hits
                      {"refills", s.current.refills},
                      {"lower_wait_s", static_cast<double>(s.current.lower_wait_ns) / 1e9},
                      // Every epoch's, never reset (metrics: counters).
                      {"hits_total", s.total.hits},
                      {"misses_total", s.total.misses},
                      {"lower_wait_s_total", static_cast<double>(s.total.lower_wait_ns) / 1e9},
                      {"cache_need_bytes", s.need_measured ? nlohmann::json(s.need_bytes)
                                                           : nlohmann::json(nullptr)}});
    }
  });
  j["jobs"] = jobs;
  if (spill != nullptr && spill->store() != nullptr) {
    const spill::SpillStats st = spill->store()->stats();
    j["tiers"]["spill"] = {{"files", st.files},
                           {"logical_bytes", st.logical_bytes},
                           {"stored_bytes", st.stored_bytes},
                           {"staging_bytes", st.staging_bytes},
                           {"dirty_bytes", st.dirty_bytes},
                           {"chunks_compressed", st.chunks_compressed},
                           {"chunks_raw", st.chunks_raw},
                           {"ssd_read_bytes", st.ssd_read_bytes},
                           {"ssd_write_bytes", st.ssd_write_bytes},
                           {"checksum_errors", st.checksum_errors}};
  }
  j["warnings"] = warnings;
  j["histograms"]["lower_load_seconds"] = HistogramJson(cf.load_time());
  j["histograms"]["read_wait_seconds"] = HistogramJson(cf.read_wait());
  if (governor != nullptr) j["governor"] = governor->StatsJson();
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace epochfs
