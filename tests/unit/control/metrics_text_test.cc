#include "epochfs/control/metrics_text.h"

#include <gtest/gtest.h>

#include <string>

namespace epochfs::control {
namespace {

TEST(PrometheusText, EveryNumberIsASeries) {
  const auto stats = nlohmann::json::parse(R"({
    "version": "0.1.0", "policy": "epoch", "hits": 3, "misses": 1, "budget": 1048576,
    "lower_in_flight": 0, "warnings": ["w"],
    "tiers": {"ram": {"bytes": 10, "objects": 2}, "spill": {"ssd_read_bytes": 7}},
    "jobs": [{"name": "a", "state": "running", "epoch": 2, "hits": 1, "misses": 3,
              "cache_need_bytes": null}],
    "governor": {"budget": 5, "urgent": false, "ticks": 9, "samples": [{"t": 1}],
                 "fit": {"plateau": true, "slope_bytes_per_s": 0.5}}})");
  EXPECT_EQ(PrometheusText(stats),
            "# TYPE epochfs_budget gauge\n"
            "epochfs_budget 1048576\n"
            "# TYPE epochfs_governor_budget gauge\n"
            "epochfs_governor_budget 5\n"
            "# TYPE epochfs_governor_fit_plateau gauge\n"
            "epochfs_governor_fit_plateau 1\n"
            "# TYPE epochfs_governor_fit_slope_bytes_per_s gauge\n"
            "epochfs_governor_fit_slope_bytes_per_s 0.5\n"
            "# TYPE epochfs_governor_ticks_total counter\n"
            "epochfs_governor_ticks_total 9\n"
            "# TYPE epochfs_governor_urgent gauge\n"
            "epochfs_governor_urgent 0\n"
            "# TYPE epochfs_hit_ratio gauge\n"
            "epochfs_hit_ratio 0.75\n"
            "# TYPE epochfs_hits_total counter\n"
            "epochfs_hits_total 3\n"
            "# TYPE epochfs_info gauge\n"
            "epochfs_info{version=\"0.1.0\",policy=\"epoch\"} 1\n"
            "# TYPE epochfs_job_epoch gauge\n"
            "epochfs_job_epoch{job=\"a\"} 2\n"
            "# TYPE epochfs_job_hit_ratio gauge\n"
            "epochfs_job_hit_ratio{job=\"a\"} 0.25\n"
            "# TYPE epochfs_job_hits gauge\n"
            "epochfs_job_hits{job=\"a\"} 1\n"
            "# TYPE epochfs_job_info gauge\n"
            "epochfs_job_info{job=\"a\",state=\"running\"} 1\n"
            "# TYPE epochfs_job_misses gauge\n"
            "epochfs_job_misses{job=\"a\"} 3\n"
            "# TYPE epochfs_lower_in_flight gauge\n"
            "epochfs_lower_in_flight 0\n"
            "# TYPE epochfs_misses_total counter\n"
            "epochfs_misses_total 1\n"
            "# TYPE epochfs_tier_bytes gauge\n"
            "epochfs_tier_bytes{tier=\"ram\"} 10\n"
            "# TYPE epochfs_tier_objects gauge\n"
            "epochfs_tier_objects{tier=\"ram\"} 2\n"
            "# TYPE epochfs_tier_ssd_read_bytes_total counter\n"
            "epochfs_tier_ssd_read_bytes_total{tier=\"spill\"} 7\n"
            "# TYPE epochfs_warnings gauge\n"
            "epochfs_warnings 1\n");
}

TEST(PrometheusText, HostileNamesAreEscapedLabelsAndKeysStayNames) {
  // A job name is a user's bytes: quotes, backslashes and newlines are
  // escaped; a key that is not a metric name is made one.
  const auto stats = nlohmann::json::parse(
      R"({"jobs": [{"name": "x\"}\nevil 1\\", "state": "s", "we-ird key": 1}]})");
  const std::string m = PrometheusText(stats);
  EXPECT_NE(m.find("epochfs_job_info{job=\"x\\\"}\\nevil 1\\\\\",state=\"s\"} 1\n"),
            std::string::npos) << m;
  EXPECT_NE(m.find("epochfs_job_we_ird_key{job="), std::string::npos) << m;
  EXPECT_EQ(m.find("\nevil"), std::string::npos) << m;
  EXPECT_EQ(m.find("hit_ratio{"), std::string::npos) << "no reads: no ratio\n" << m;
}

TEST(PrometheusText, NotAnObjectIsEmpty) {
  EXPECT_EQ(PrometheusText(nlohmann::json::parse("[1,2]")), "");
  EXPECT_EQ(PrometheusText(nlohmann::json::parse("null")), "");
}

}  // namespace
}  // namespace epochfs::control
