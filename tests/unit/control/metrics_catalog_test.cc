// The catalog of metric names against what uses them: the Grafana dashboard
// (conf/grafana/epochfs.json) queries only names epochfs serves, and
// docs/metrics.md lists every family (EPOCHFS_SOURCE_ROOT: the source tree).
#include "epochfs/control/metrics_catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
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
  // Every "epochfs_" followed by name characters (std::regex trips GCC 12's
  // -Wmaybe-uninitialized in the sanitizer trees).
  std::set<std::string> used;
  for (const std::string& s : strings) {
    for (size_t at = s.find("epochfs_"); at != std::string::npos; at = s.find("epochfs_", at)) {
      size_t end = at + 8;
      while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '_')) {
        ++end;
      }
      if (end > at + 8) used.insert(s.substr(at, end - at));
      at = end;
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
  for (const std::string& n : CatalogFamilies()) {
    EXPECT_TRUE(n.starts_with("epochfs_") && n.size() > 8) << n;
    for (char c : n) {
      EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << n;
    }
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
