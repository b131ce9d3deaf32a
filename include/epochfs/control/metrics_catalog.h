// MetricsCatalog: what each field of the `stats` JSON is as a Prometheus
// metric: its name (base units: _bytes, _seconds; counters end in _total),
// its type, the factor from the field's unit to the metric's, and its HELP.
//
// A field is named by its dotted path in the stats, with "*" for a tier's
// name or a job's row: "hits", "tiers.*.bytes", "jobs.*.hits",
// "governor.fit.plateau", "histograms.lower_load_seconds". A field the
// catalog does not know (added to the stats since) still gets a metric, so
// that nothing added is lost: a gauge named after its path, its unit suffix
// made a base unit (_ms, _ns and _s become _seconds, the value scaled), with
// a HELP that says which stats field it is.
// Pure: constant data and lookups; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace epochfs::control {

enum class MetricType { kGauge, kCounter, kHistogram };

struct MetricSpec {
  std::string name;   // full family name, "epochfs_hits_total"; "" = not a metric
  MetricType type = MetricType::kGauge;
  double scale = 1.0;  // metric value = field value * scale
  std::string help;
};

// The metric of the stats field at `path`. A field the catalog does not
// know is named from its path: "tiers.*.F" epochfs_tier_F, "jobs.*.F"
// epochfs_job_F, "A.B.F" epochfs_A_B_F (characters that cannot be in a name
// become '_').
MetricSpec MetricFor(std::string_view path);

// Every family name the catalog can produce, with the families built from
// more than one field (epochfs_info, epochfs_hit_ratio, ...), sorted: for
// the docs and the dashboard's test.
std::vector<std::string> CatalogFamilies();

}  // namespace epochfs::control
