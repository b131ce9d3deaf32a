#include "epochfs/control/metrics_text.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "epochfs/control/metrics_catalog.h"

namespace epochfs::control::metrics_text_test {

const char* kStats = R"({
    "version": "0.1.0", "policy": "epoch", "mountpoint": "/mnt/a", "hits": 3, "misses": 1,
    "budget": 1048576, "lower_in_flight": 0, "read_wait_ms": 1500, "warnings": ["w"],
    "lower_calls_by_kind": {"lookup": 4, "read": 2},
    "tiers": {"ram": {"bytes": 10, "objects": 2}, "spill": {"ssd_read_bytes": 7},
              "disk": {"hits": 5, "writes_bytes": 3, "state": "full"}},
    "jobs": [{"name": "a", "id": 1, "state": "caching", "epoch": 2, "hits": 1, "misses": 3,
              "hits_total": 11, "misses_total": 13, "lower_wait_s": 0.5,
              "cache_need_bytes": null}],
    "histograms": {"lower_load_seconds": {"le": [0.001, 1], "cumulative": [2, 3],
                                          "count": 4, "sum": 61.5}},
    "governor": {"budget": 5, "urgent": false, "ticks": 9, "samples": [{"t": 1}],
                 "fit": {"plateau": true, "slope_bytes_per_s": 0.5}}})";

// Every line: a "# HELP NAME", "# TYPE NAME T" pair before each family's
// samples, and samples of that family only.
struct Parsed {
  std::map<std::string, std::string> type, help;
  std::map<std::string, double> samples;  // "name{labels}" -> value
};

Parsed Parse(const std::string& text) {
  Parsed p;
  std::istringstream in(text);
  std::string line, family;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      const size_t sp = line.find(' ', 7);
      family = line.substr(7, sp - 7);
      EXPECT_EQ(p.help.count(family), 0u) << "HELP twice: " << family;
      p.help[family] = line.substr(sp + 1);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      const size_t sp = line.find(' ', 7);
      EXPECT_EQ(line.substr(7, sp - 7), family) << "TYPE without its HELP: " << line;
      p.type[family] = line.substr(sp + 1);
      continue;
    }
    const size_t sp = line.rfind(' ');
    const std::string series = line.substr(0, sp);
    EXPECT_EQ(series.rfind(family, 0), 0u) << "sample outside its family: " << line;
    EXPECT_NE(series.find("mountpoint=\"/mnt/a\""), std::string::npos) << line;
    EXPECT_EQ(p.samples.count(series), 0u) << "series twice: " << line;
    p.samples[series] = std::stod(line.substr(sp + 1));
  }
  return p;
}

TEST(PrometheusText, EveryFamilyHasHelpTypeAndTheMountpoint) {
  const Parsed p = Parse(PrometheusText(nlohmann::json::parse(kStats)));
  const std::string m = "mountpoint=\"/mnt/a\"";
  auto at = [&](const std::string& series) {
    auto it = p.samples.find(series);
    EXPECT_NE(it, p.samples.end()) << series;
    return it == p.samples.end() ? -1.0 : it->second;
  };
  EXPECT_EQ(p.type.at("epochfs_hits_total"), "counter");
  EXPECT_EQ(at("epochfs_hits_total{" + m + "}"), 3);
  EXPECT_EQ(p.help.at("epochfs_hits_total"), "Reads served from the cache.");
  EXPECT_EQ(p.type.at("epochfs_budget_bytes"), "gauge");
  EXPECT_EQ(at("epochfs_budget_bytes{" + m + "}"), 1048576);
  // Milliseconds become seconds.
  EXPECT_EQ(p.type.at("epochfs_read_slot_wait_seconds_total"), "counter");
  EXPECT_EQ(at("epochfs_read_slot_wait_seconds_total{" + m + "}"), 1.5);
  EXPECT_EQ(at("epochfs_hit_ratio{" + m + "}"), 0.75);
  EXPECT_EQ(at("epochfs_info{" + m + ",version=\"0.1.0\",policy=\"epoch\"}"), 1);
  EXPECT_EQ(at("epochfs_lower_calls_by_kind_total{" + m + ",kind=\"lookup\"}"), 4);
  EXPECT_EQ(at("epochfs_tier_bytes{" + m + ",tier=\"ram\"}"), 10);
  EXPECT_EQ(p.type.at("epochfs_tier_ssd_read_bytes_total"), "counter");
  EXPECT_EQ(at("epochfs_tier_hits_total{" + m + ",tier=\"disk\"}"), 5);
  EXPECT_EQ(at("epochfs_tier_written_bytes_total{" + m + ",tier=\"disk\"}"), 3);
  EXPECT_EQ(at("epochfs_tier_state{" + m + ",tier=\"disk\",state=\"full\"}"), 1);
  EXPECT_EQ(at("epochfs_warnings{" + m + "}"), 1);
  EXPECT_EQ(at("epochfs_governor_fit_plateau{" + m + "}"), 1);
  EXPECT_EQ(at("epochfs_governor_urgent{" + m + "}"), 0);
  EXPECT_EQ(at("epochfs_governor_fit_slope_bytes_per_second{" + m + "}"), 0.5);
  // A job: per-epoch counts are gauges named so, its whole run's counters.
  const std::string j = m + ",job=\"a\"";
  EXPECT_EQ(p.type.at("epochfs_job_epoch_hits"), "gauge");
  EXPECT_EQ(at("epochfs_job_epoch_hits{" + j + "}"), 1);
  EXPECT_EQ(at("epochfs_job_epoch_lower_wait_seconds{" + j + "}"), 0.5);
  EXPECT_EQ(p.type.at("epochfs_job_hits_total"), "counter");
  EXPECT_EQ(at("epochfs_job_hits_total{" + j + "}"), 11);
  EXPECT_EQ(at("epochfs_job_misses_total{" + j + "}"), 13);
  EXPECT_EQ(at("epochfs_job_epoch_hit_ratio{" + j + "}"), 0.25);
  EXPECT_EQ(at("epochfs_job_info{" + j + ",state=\"caching\"}"), 1);
  EXPECT_EQ(at("epochfs_jobs{" + m + ",state=\"caching\"}"), 1);
  EXPECT_EQ(at("epochfs_jobs{" + m + ",state=\"done\"}"), 0);
  EXPECT_EQ(p.samples.count("epochfs_job_id{" + j + "}"), 0u) << "an internal id is no metric";
  // The histogram: cumulative buckets, +Inf = count.
  EXPECT_EQ(p.type.at("epochfs_lower_load_seconds"), "histogram");
  EXPECT_EQ(at("epochfs_lower_load_seconds_bucket{" + m + ",le=\"0.001\"}"), 2);
  EXPECT_EQ(at("epochfs_lower_load_seconds_bucket{" + m + ",le=\"1\"}"), 3);
  EXPECT_EQ(at("epochfs_lower_load_seconds_bucket{" + m + ",le=\"+Inf\"}"), 4);
  EXPECT_EQ(at("epochfs_lower_load_seconds_sum{" + m + "}"), 61.5);
  EXPECT_EQ(at("epochfs_lower_load_seconds_count{" + m + "}"), 4);
  // Every family the text has is one the catalog knows (no field unknown).
  const std::vector<std::string> known = CatalogFamilies();
  for (const auto& [name, type] : p.type) {
    EXPECT_TRUE(std::binary_search(known.begin(), known.end(), name)) << name;
  }
}

TEST(PrometheusText, AFieldTheCatalogDoesNotKnowIsAGaugeInBaseUnits) {
  const auto stats = nlohmann::json::parse(R"({"mountpoint": "/mnt/a",
    "new_delay_ms": 250, "tiers": {"disk": {"read_bytes": 9, "queue_ns": 2000000000}},
    "governor": {"new": {"thing_s": 3}}, "jobs": [{"name": "a", "state": "s", "x_ms": 5}]})");
  const Parsed p = Parse(PrometheusText(stats));
  const std::string m = "mountpoint=\"/mnt/a\"";
  EXPECT_EQ(p.type.at("epochfs_new_delay_seconds"), "gauge");
  EXPECT_EQ(p.samples.at("epochfs_new_delay_seconds{" + m + "}"), 0.25);
  EXPECT_NE(p.help.at("epochfs_new_delay_seconds").find("new_delay_ms"), std::string::npos);
  EXPECT_EQ(p.samples.at("epochfs_tier_read_bytes{" + m + ",tier=\"disk\"}"), 9);
  EXPECT_EQ(p.samples.at("epochfs_tier_queue_seconds{" + m + ",tier=\"disk\"}"), 2);
  EXPECT_EQ(p.samples.at("epochfs_governor_new_thing_seconds{" + m + "}"), 3);
  EXPECT_EQ(p.samples.at("epochfs_job_x_seconds{" + m + ",job=\"a\"}"), 0.005);
}

TEST(PrometheusText, AggregatesOnlyNameNoJob) {
  const std::string t =
      PrometheusText(nlohmann::json::parse(kStats), MetricsOptions{.aggregates_only = true});
  EXPECT_EQ(t.find("job=\""), std::string::npos) << t;
  EXPECT_NE(t.find("epochfs_jobs{mountpoint=\"/mnt/a\",state=\"caching\"} 1\n"),
            std::string::npos) << t;
  EXPECT_NE(t.find("epochfs_hits_total{mountpoint=\"/mnt/a\"} 3\n"), std::string::npos) << t;
}

TEST(PrometheusText, HostileNamesAreEscapedLabelsAndKeysStayNames) {
  // A job name and a mountpoint are a user's bytes: quotes, backslashes and
  // newlines are escaped; a key that is not a metric name is made one.
  const auto stats = nlohmann::json::parse(
      R"({"mountpoint": "/m\"n\n", "jobs": [{"name": "x\"}\nevil 1\\", "state": "s",
          "we-ird key": 1}]})");
  const std::string m = PrometheusText(stats);
  EXPECT_NE(m.find("epochfs_job_info{mountpoint=\"/m\\\"n\\n\",job=\"x\\\"}\\nevil 1\\\\\",state=\"s\"} 1\n"),
            std::string::npos) << m;
  EXPECT_NE(m.find("epochfs_job_we_ird_key{mountpoint="), std::string::npos) << m;
  EXPECT_EQ(m.find("\nevil"), std::string::npos) << m;
  EXPECT_EQ(m.find("hit_ratio{"), std::string::npos) << "no reads: no ratio\n" << m;
}

TEST(PrometheusText, NotAnObjectIsEmpty) {
  EXPECT_EQ(PrometheusText(nlohmann::json::parse("[1,2]")), "");
  EXPECT_EQ(PrometheusText(nlohmann::json::parse("null")), "");
}

}  // namespace epochfs::control::metrics_text_test
