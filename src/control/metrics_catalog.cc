#include "epochfs/control/metrics_catalog.h"

#include <algorithm>
#include <set>

namespace epochfs::control {
namespace {

constexpr MetricType G = MetricType::kGauge;
constexpr MetricType C = MetricType::kCounter;
constexpr MetricType H = MetricType::kHistogram;

struct Entry {
  std::string_view path;
  std::string_view name;  // "" = not a metric
  MetricType type;
  double scale;
  std::string_view help;
};

// One line per stats field (src/daemon/stats_json.cc, the governor's
// StatsJson), in the stats' order. docs/metrics.md lists them.
constexpr Entry kCatalog[] = {
    {"budget", "epochfs_budget_bytes", G, 1, "Byte budget of the cache now (cache.memory, or the memory governor's)."},
    {"used", "epochfs_used_bytes", G, 1, "Bytes the cached objects hold (in the daemon and handed over to the kernel)."},
    {"objects", "epochfs_objects", G, 1, "Objects cached."},
    {"hits", "epochfs_hits_total", C, 1, "Reads served from the cache."},
    {"misses", "epochfs_misses_total", C, 1, "Reads loaded from LOWER."},
    {"coalesced", "epochfs_coalesced_total", C, 1, "Reads that waited for another reader's load of the same object."},
    {"bytes_read_lower", "epochfs_lower_read_bytes_total", C, 1, "Bytes read from LOWER (loads, prefetches, streamed reads)."},
    {"admissions", "epochfs_admissions_total", C, 1, "Objects admitted to the cache."},
    {"evictions", "epochfs_evictions_total", C, 1, "Objects evicted from the cache."},
    {"refused", "epochfs_refused_total", C, 1, "Admissions the store refused (no room)."},
    {"invalidations", "epochfs_invalidations_total", C, 1, "Cached objects dropped because the LOWER file changed."},
    {"lower_errors", "epochfs_lower_errors_total", C, 1, "Loads from LOWER that failed."},
    {"streamed_opens", "epochfs_streamed_opens_total", C, 1, "Opens of files too large to cache, read from LOWER uncached."},
    {"streamed_bytes", "epochfs_streamed_bytes_total", C, 1, "Bytes of those files read from LOWER."},
    {"prefetched", "epochfs_prefetched_total", C, 1, "Objects loaded ahead of their read and admitted."},
    {"prefetch_bytes", "epochfs_prefetch_bytes_total", C, 1, "Bytes read from LOWER by prefetch."},
    {"prefetch_hits", "epochfs_prefetch_hits_total", C, 1, "First reads of a prefetched object."},
    {"prefetch_wasted", "epochfs_prefetch_wasted_total", C, 1, "Prefetched objects evicted or dropped unread."},
    {"handovers", "epochfs_handovers_total", C, 1, "Objects handed over to the kernel's page cache (fuse.one_copy)."},
    {"refills", "epochfs_refills_total", C, 1, "Handed-over objects read again from LOWER."},
    {"refill_bytes", "epochfs_refill_bytes_total", C, 1, "Bytes read from LOWER by refills."},
    {"lower_timeouts", "epochfs_lower_timeouts_total", C, 1, "LOWER calls given up on after lower.timeout."},
    {"lower_interrupts", "epochfs_lower_interrupts_total", C, 1, "LOWER calls abandoned because the reader was interrupted."},
    {"lower_stuck", "epochfs_lower_stuck", G, 1, "LOWER workers inside a call given up on, now."},
    {"lower_in_flight", "epochfs_lower_in_flight", G, 1, "LOWER calls running now."},
    {"lower_calls", "epochfs_lower_calls_total", C, 1, "Calls on LOWER."},
    {"lower_inline_calls", "epochfs_lower_inline_calls_total", C, 1, "Calls on LOWER run on the reader's own thread."},
    {"lower_calls_by_kind.*", "epochfs_lower_calls_by_kind_total", C, 1, "Calls on LOWER, by kind."},
    {"lower_down", "epochfs_lower_down", G, 1, "1 while LOWER is down (its calls fail or time out), else 0."},
    {"lower_down_seconds", "epochfs_lower_down_seconds", G, 1, "Seconds LOWER has been down (0 while up)."},
    {"known_paths", "epochfs_known_paths", G, 1, "LOWER paths whose attributes are remembered."},
    {"known_names", "epochfs_known_names", G, 1, "Names of remembered LOWER listings."},
    {"known_answers", "epochfs_known_answers_total", C, 1, "Metadata calls answered from memory instead of LOWER."},
    {"known_last_known", "epochfs_known_last_known_total", C, 1, "Of those, answered with last known attributes because LOWER failed."},
    {"known_full", "epochfs_known_full_total", C, 1, "Paths or listings not remembered: cache.metadata_entries reached."},
    {"stat_ahead", "epochfs_stat_ahead_total", C, 1, "Declared files whose attributes were fetched ahead of their read (not loaded ahead)."},
    {"read_waits", "epochfs_read_slot_waits_total", C, 1, "Loads that waited for a read slot (lower.read_slots)."},
    {"read_wait_ms", "epochfs_read_slot_wait_seconds_total", C, 1e-3, "Time loads waited for a read slot."},
    {"read_aged", "epochfs_read_slot_aged_total", C, 1, "Loads started after waiting the longest a load waits."},
    {"read_waiting", "epochfs_read_slot_waiting", G, 1, "Loads waiting for a read slot now."},
    {"max_object_bytes", "epochfs_max_object_bytes", G, 1, "Largest file cached whole; larger ones are cached in blocks or streamed."},
    {"request_bytes", "epochfs_request_bytes", G, 1, "What one LOWER request costs beyond its bytes, in bytes (cache.request_bytes)."},
    {"tiers.*.objects", "epochfs_tier_objects", G, 1, "Objects cached in the tier."},
    {"tiers.*.bytes", "epochfs_tier_bytes", G, 1, "Bytes cached in the tier."},
    {"pool", "epochfs_pool_bytes", G, 1, "Bytes of the budget in the shared pool (epoch policy)."},
    {"shared", "epochfs_shared_bytes", G, 1, "Bytes held for objects several jobs read."},
    {"resident", "epochfs_resident_bytes", G, 1, "Bytes the policy counts as cached."},
    {"need_total_bytes", "epochfs_need_total_bytes", G, 1, "Sum of the jobs' measured cache need."},
    {"jobs.*.id", "", G, 1, ""},
    {"jobs.*.epoch", "epochfs_job_epoch", G, 1, "The job's current epoch."},
    {"jobs.*.batch", "epochfs_job_epoch_batches", G, 1, "Batches the job consumed in its current epoch."},
    {"jobs.*.cur_bytes", "epochfs_job_cur_bytes", G, 1, "Bytes cached because the job reads them in its current epoch."},
    {"jobs.*.next_bytes", "epochfs_job_next_bytes", G, 1, "Bytes cached because the job reads them in its next epoch."},
    {"jobs.*.tail_bytes", "epochfs_job_tail_bytes", G, 1, "Bytes cached for the job's epochs after the next."},
    {"jobs.*.granted_unused_bytes", "epochfs_job_granted_unused_bytes", G, 1, "Bytes granted to the job and not filled yet."},
    {"jobs.*.hits", "epochfs_job_epoch_hits", G, 1, "The job's hits in its current epoch (restarts at 0 each epoch)."},
    {"jobs.*.misses", "epochfs_job_epoch_misses", G, 1, "The job's misses in its current epoch (restarts at 0 each epoch)."},
    {"jobs.*.lower_wait_s", "epochfs_job_epoch_lower_wait_seconds", G, 1, "Time the job's reads waited for LOWER in its current epoch."},
    {"jobs.*.hits_total", "epochfs_job_hits_total", C, 1, "The job's hits, every epoch."},
    {"jobs.*.misses_total", "epochfs_job_misses_total", C, 1, "The job's misses, every epoch."},
    {"jobs.*.lower_wait_s_total", "epochfs_job_lower_wait_seconds_total", C, 1, "Time the job's reads waited for LOWER, every epoch."},
    {"jobs.*.cache_need_bytes", "epochfs_job_cache_need_bytes", G, 1, "Bytes the job needs cached to be served without waiting (measured after warm-up)."},
    {"tiers.*.budget", "epochfs_tier_budget_bytes", G, 1, "Bytes the tier may hold now (disk)."},
    {"tiers.*.hits", "epochfs_tier_hits_total", C, 1, "Misses in RAM the tier served, costing LOWER nothing (disk)."},
    {"tiers.*.reads_bytes", "epochfs_tier_read_bytes_total", C, 1, "Bytes read from the tier's disk (disk)."},
    {"tiers.*.writes", "epochfs_tier_writes_total", C, 1, "Objects written to the tier (disk)."},
    {"tiers.*.writes_bytes", "epochfs_tier_written_bytes_total", C, 1, "Bytes written to the tier's disk, files and index (disk)."},
    {"tiers.*.skipped", "epochfs_tier_skipped_total", C, 1, "Objects loaded from LOWER the tier did not take: their next read lies beyond what it holds (disk)."},
    {"tiers.*.stale", "epochfs_tier_stale_total", C, 1, "Copies of another version than LOWER's, dropped (disk)."},
    {"tiers.*.write_errors", "epochfs_tier_write_errors_total", C, 1, "Writes to the tier that failed, ENOSPC included (disk)."},
    {"tiers.*.index_bytes", "epochfs_tier_index_bytes", G, 1, "Bytes of the tier's on-disk index (disk)."},
    {"tiers.*.queued_bytes", "epochfs_tier_queued_bytes", G, 1, "Bytes waiting to be written to the tier (disk)."},
    {"tiers.*.files", "epochfs_tier_files", G, 1, "Files in the tier (spill)."},
    {"tiers.*.logical_bytes", "epochfs_tier_logical_bytes", G, 1, "Logical bytes of the tier's files (spill)."},
    {"tiers.*.stored_bytes", "epochfs_tier_stored_bytes", G, 1, "Bytes the tier's files take on its device (spill)."},
    {"tiers.*.staging_bytes", "epochfs_tier_staging_bytes", G, 1, "Bytes staged in RAM (spill)."},
    {"tiers.*.dirty_bytes", "epochfs_tier_dirty_bytes", G, 1, "Staged bytes not yet written out (spill)."},
    {"tiers.*.chunks_compressed", "epochfs_tier_chunks_compressed_total", C, 1, "Chunks written compressed (spill)."},
    {"tiers.*.chunks_raw", "epochfs_tier_chunks_raw_total", C, 1, "Chunks written uncompressed (spill)."},
    {"tiers.*.ssd_read_bytes", "epochfs_tier_ssd_read_bytes_total", C, 1, "Bytes read from the tier's device (spill)."},
    {"tiers.*.ssd_write_bytes", "epochfs_tier_ssd_write_bytes_total", C, 1, "Bytes written to the tier's device (spill)."},
    {"tiers.*.checksum_errors", "epochfs_tier_checksum_errors_total", C, 1, "Reads whose checksum did not match (spill: chunks; disk: objects, read again from LOWER)."},
    {"governor.interval_s", "epochfs_governor_interval_seconds", G, 1, "Seconds between the memory governor's samples."},
    {"governor.ticks", "epochfs_governor_ticks_total", C, 1, "Samples the memory governor took."},
    {"governor.read_errors", "epochfs_governor_read_errors_total", C, 1, "Samples the memory governor could not read."},
    {"governor.total", "epochfs_governor_total_bytes", G, 1, "Memory the daemon may use (MemTotal or its cgroup's limit)."},
    {"governor.available", "epochfs_governor_available_bytes", G, 1, "Memory available now."},
    {"governor.cache", "epochfs_governor_cache_bytes", G, 1, "Memory the cache holds."},
    {"governor.non_cache", "epochfs_governor_non_cache_bytes", G, 1, "Memory used outside the cache."},
    {"governor.fit.n", "epochfs_governor_fit_samples", G, 1, "Samples in the governor's fit."},
    {"governor.fit.slope_bytes_per_s", "epochfs_governor_fit_slope_bytes_per_second", G, 1, "Growth of the memory used outside the cache."},
    {"governor.fit.slope_stderr", "epochfs_governor_fit_slope_stderr_bytes_per_second", G, 1, "Standard error of that growth."},
    {"governor.fit.intercept_bytes", "epochfs_governor_fit_intercept_bytes", G, 1, "Intercept of the governor's fit."},
    {"governor.fit.residual_stddev", "epochfs_governor_fit_residual_stddev_bytes", G, 1, "Standard deviation of the fit's residuals."},
    {"governor.fit.plateau", "epochfs_governor_fit_plateau", G, 1, "1 when the memory outside the cache has stopped growing."},
    {"governor.fit.window_s", "epochfs_governor_fit_window_seconds", G, 1, "Seconds of samples in the fit."},
    {"governor.horizon_s", "epochfs_governor_horizon_seconds", G, 1, "Seconds ahead the governor predicts."},
    {"governor.predicted_peak", "epochfs_governor_predicted_peak_bytes", G, 1, "Predicted peak of the memory used outside the cache."},
    {"governor.target", "epochfs_governor_target_bytes", G, 1, "Budget the governor aims at."},
    {"governor.budget", "epochfs_governor_budget_bytes", G, 1, "Budget the governor applied."},
    {"governor.urgent", "epochfs_governor_urgent", G, 1, "1 when the governor shrinks the cache at once."},
    {"governor.margin", "epochfs_governor_margin_bytes", G, 1, "Memory the governor leaves free (cache.memory_margin)."},
    {"governor.min", "epochfs_governor_min_bytes", G, 1, "Smallest budget (cache.memory_min)."},
    {"governor.max", "epochfs_governor_max_bytes", G, 1, "Largest budget (cache.memory_max)."},
    {"governor.shrinks", "epochfs_governor_shrinks_total", C, 1, "Times the governor shrank the budget."},
    {"governor.grows", "epochfs_governor_grows_total", C, 1, "Times the governor grew the budget."},
    {"governor.evicted_objects", "epochfs_governor_evicted_objects_total", C, 1, "Objects evicted by the governor's shrinks."},
    {"governor.cgroup.limited", "epochfs_governor_cgroup_limited", G, 1, "1 when a memory cgroup limits the daemon."},
    {"governor.cgroup.limit", "epochfs_governor_cgroup_limit_bytes", G, 1, "The memory cgroup's limit."},
    {"governor.cgroup.usage", "epochfs_governor_cgroup_usage_bytes", G, 1, "The memory cgroup's usage."},
    {"governor.cgroup.inactive_file", "epochfs_governor_cgroup_inactive_file_bytes", G, 1, "The memory cgroup's inactive file pages."},
    {"governor.meminfo.total", "epochfs_governor_meminfo_total_bytes", G, 1, "MemTotal."},
    {"governor.meminfo.available", "epochfs_governor_meminfo_available_bytes", G, 1, "MemAvailable."},
    {"histograms.lower_load_seconds", "epochfs_lower_load_seconds", H, 1, "Time of each load from LOWER (open, stat, read; prefetches and failed loads too)."},
    {"histograms.read_wait_seconds", "epochfs_read_wait_seconds", H, 1, "Time each read waited in the cache for its object's bytes: a hit's lookup, or a load with its wait for a read slot."},
};

// Families built from more than one field (metrics_text.cc).
constexpr std::string_view kComposite[] = {
    "epochfs_info", "epochfs_hit_ratio", "epochfs_warnings", "epochfs_jobs", "epochfs_job_info",
    "epochfs_job_epoch_hit_ratio", "epochfs_tier_state"};

// [a-zA-Z0-9_] kept, anything else '_'.
std::string NamePart(std::string_view k) {
  std::string out(k);
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) c = '_';
  }
  return out;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

MetricSpec Derived(std::string_view path) {
  std::string rest;
  std::string name = "epochfs_";
  MetricSpec m;
  if (path.rfind("histograms.", 0) == 0) {
    m.type = MetricType::kHistogram;
    rest = std::string(path.substr(11));
  } else if (path.rfind("tiers.*.", 0) == 0) {
    name += "tier_";
    rest = std::string(path.substr(8));
  } else if (path.rfind("jobs.*.", 0) == 0) {
    name += "job_";
    rest = std::string(path.substr(7));
  } else {
    rest = std::string(path);
  }
  std::erase(rest, '*');
  m.help = "The stats field " + std::string(path) + " (no description yet: see epochfs-control(7)).";
  // Base units: seconds.
  struct Unit {
    std::string_view suffix;
    double scale;
  };
  for (const Unit u : {Unit{"_ms", 1e-3}, Unit{"_ns", 1e-9}, Unit{"_s", 1.0}}) {
    if (m.type != MetricType::kHistogram && EndsWith(rest, u.suffix)) {
      rest = rest.substr(0, rest.size() - u.suffix.size()) + "_seconds";
      m.scale = u.scale;
      break;
    }
  }
  name += NamePart(rest);
  // Two '_' in a row (an empty part) read badly; keep one.
  std::string squeezed;
  for (char c : name) {
    if (c == '_' && !squeezed.empty() && squeezed.back() == '_') continue;
    squeezed.push_back(c);
  }
  while (!squeezed.empty() && squeezed.back() == '_') squeezed.pop_back();
  m.name = squeezed;
  return m;
}

}  // namespace

MetricSpec MetricFor(std::string_view path) {
  for (const Entry& e : kCatalog) {
    if (e.path == path) {
      return MetricSpec{std::string(e.name), e.type, e.scale, std::string(e.help)};
    }
  }
  return Derived(path);
}

std::vector<std::string> CatalogFamilies() {
  std::set<std::string> names;
  for (const Entry& e : kCatalog) {
    if (!e.name.empty()) names.emplace(e.name);
  }
  for (std::string_view n : kComposite) names.emplace(n);
  return {names.begin(), names.end()};
}

}  // namespace epochfs::control
