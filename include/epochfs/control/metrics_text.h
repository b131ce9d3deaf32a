// PrometheusText: the `stats` JSON of a mount as Prometheus text exposition
// (format 0.0.4), served as `.epochfs/metrics` (per reader: their own jobs'
// rows, root all) and by the daemon's HTTP endpoint (metrics.listen:
// aggregates only).
//
// Every family has # HELP and # TYPE; names, types, base units (_bytes,
// _seconds) and HELP come from the catalog (control/metrics_catalog.h), which
// also names a field it does not know. Every series carries the
// `mountpoint` label (the stats' "mountpoint"), so that two mounts on a node
// do not collide:
//   top-level fields         epochfs_F (counters: epochfs_F_total)
//   tiers.T.F                epochfs_tier_F{tier="T"}
//   lower_calls_by_kind.K    epochfs_lower_calls_by_kind_total{kind="K"}
//   jobs[i].F                epochfs_job_F{job="NAME"}: per-epoch counts as
//                            gauges (epochfs_job_epoch_hits ...), the job's
//                            cumulative ones as counters (epochfs_job_hits_total
//                            ...); epochfs_job_info{job,state} 1 and
//                            epochfs_job_epoch_hit_ratio{job}
//   governor.F, governor.O.F epochfs_governor_F, epochfs_governor_O_F
//   histograms.H             epochfs_H, a histogram (_bucket{le}, _sum, _count)
// and epochfs_info{version,policy} 1, epochfs_hit_ratio (all reads so far),
// epochfs_warnings (how many), epochfs_jobs{state} (how many jobs).
// Booleans are 0/1; strings are label values, escaped as the format
// requires; arrays, nulls and numbers that are not finite are left out.
// Cost: linear in the size of the JSON. Pure: no I/O, no state.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace epochfs::control {

struct MetricsOptions {
  // No per-job series (no job names): only what every user may see. The
  // job counts by state stay.
  bool aggregates_only = false;
};

std::string PrometheusText(const nlohmann::json& stats, const MetricsOptions& options = {});

}  // namespace epochfs::control
