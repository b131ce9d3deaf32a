// The catalog of metric names against what uses them: the Grafana dashboard
// (conf/grafana/epochfs.json) queries only names epochfs serves, and
// docs/metrics.md lists every family (EPOCHFS_SOURCE_ROOT: the source tree).
#include "epochfs/control/metrics_catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace epochfs::control::metrics_catalog_test {

std::string SourceFile(const std::string& rel) {
  const char* root = std::getenv("EPOCHFS_SOURCE_ROOT");
  EXPECT_NE(root, nullptr) << "EPOCHFS_SOURCE_ROOT unset";
  std::ifstream in(std::string(root == nullptr ? "." : root) + "/" + rel);
  EXPECT_TRUE(in.good()) << rel;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every string in `j` (the queries, wherever the dashboard keeps them).
void Strings(const nlohmann::json& j, std::vector<std::string>* out) {
  if (j.is_string()) {
    out->push_back(j.get<std::string>());
  } else if (j.is_structured()) {
    for (const auto& v : j) Strings(v, out);
  }
}

bool Known(const std::vector<std::string>& families, const std::string& name) {
  return std::binary_search(families.begin(), families.end(), name);
}

TEST(MetricsCatalog, TheDashboardQueriesOnlyServedNames) {
  const auto dash = nlohmann::json::parse(SourceFile("conf/grafana/epochfs.json"));
  ASSERT_TRUE(dash.contains("panels"));
  const std::vector<std::string> families = CatalogFamilies();
  std::vector<std::string> strings;
  Strings(dash, &strings);
  const std::regex metric("epochfs_[a-zA-Z0-9_]+");
  std::set<std::string> used;
  for (const std::string& s : strings) {
    for (auto it = std::sregex_iterator(s.begin(), s.end(), metric); it != std::sregex_iterator();
         ++it) {
      used.insert(it->str());
    }
  }
  EXPECT_GE(used.size(), 10u) << "the dashboard's queries were not found";
  for (const std::string& name : used) {
    if (Known(families, name)) continue;
    // A histogram's series: FAMILY_bucket, _sum, _count.
    bool part = false;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s(suffix);
      if (name.size() > s.size() && name.ends_with(s) &&
          Known(families, name.substr(0, name.size() - s.size()))) {
        part = true;
      }
    }
    EXPECT_TRUE(part) << "the dashboard queries " << name << ", which epochfs does not serve";
  }
  // Every panel has a title and a query.
  for (const auto& p : dash["panels"]) {
    EXPECT_FALSE(p.value("title", "").empty());
    EXPECT_FALSE(p["targets"].empty()) << p.value("title", "");
  }
}

TEST(MetricsCatalog, TheDocsListEveryFamily) {
  const std::string doc = SourceFile("docs/metrics.md");
  for (const std::string& name : CatalogFamilies()) {
    EXPECT_TRUE(doc.find("`" + name + "`") != std::string::npos ||
                doc.find("`" + name + "{") != std::string::npos)
        << name << " is not in docs/metrics.md";
  }
}

TEST(MetricsCatalog, NamesFollowTheConventions) {
  const std::regex name("epochfs_[a-z0-9_]+");
  for (const std::string& n : CatalogFamilies()) {
    EXPECT_TRUE(std::regex_match(n, name)) << n;
    EXPECT_EQ(n.find("__"), std::string::npos) << n;
    for (const char* bad : {"_ms", "_ns", "_s", "_bytes_total_", "_seconds_total_"}) {
      EXPECT_FALSE(n.ends_with(bad)) << n << ": not a base unit";
    }
  }
  // A counter ends in _total; what the catalog says of a few fields.
  for (const char* path : {"hits", "bytes_read_lower", "jobs.*.hits_total", "read_wait_ms"}) {
    const MetricSpec m = MetricFor(path);
    EXPECT_EQ(m.type, MetricType::kCounter) << path;
    EXPECT_TRUE(m.name.ends_with("_total")) << path;
    EXPECT_FALSE(m.help.empty()) << path;
  }
  EXPECT_EQ(MetricFor("jobs.*.hits").type, MetricType::kGauge) << "per epoch: it restarts";
  EXPECT_EQ(MetricFor("read_wait_ms").scale, 1e-3);
}

}  // namespace epochfs::control::metrics_catalog_test
