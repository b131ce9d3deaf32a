// PrometheusText: the `stats` JSON of a mount as Prometheus text exposition
// (format 0.0.4), served as `.epochfs/metrics` for a node exporter's textfile
// collector, a scraper behind a one-line HTTP shim, or `watch`.
//
// Every number of the stats becomes a series named epochfs_...:
//   top-level numbers        epochfs_KEY (counters: epochfs_KEY_total)
//   tiers.T.F                epochfs_tier_F{tier="T"}
//   jobs[i].F                epochfs_job_F{job="NAME"}, plus
//                            epochfs_job_info{job,state} 1 and
//                            epochfs_job_hit_ratio{job} (current epoch)
//   governor.F, governor.O.F epochfs_governor_F, epochfs_governor_O_F
//                            (booleans as 0/1; its sample arrays left out)
// and epochfs_info{version,policy} 1, epochfs_hit_ratio (all reads so far),
// epochfs_warnings (how many). Strings are label values, escaped as the
// format requires; a number that is not finite is left out.
// Cost: linear in the size of the JSON. Pure: no I/O, no state.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace epochfs::control {

std::string PrometheusText(const nlohmann::json& stats);

}  // namespace epochfs::control
