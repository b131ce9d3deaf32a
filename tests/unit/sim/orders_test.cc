// Unit tests for FormatOrdersJson (`epochfs sim WORKLOAD --orders`): what a
// real run reads to replay the simulator's workload must be exactly the
// trace's sizes and per-epoch orders.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "epochfs/sim/report.h"
#include "epochfs/sim/trace.h"
#include "epochfs/sim/workload.h"

namespace epochfs::sim::orders_test {

constexpr const char* kTwoJobs = R"(seed = 3
budget = "50%"
[storage]
bandwidth = "64MiB"
[[job]]
name = "shards"
samples = 12
size = { dist = "uniform", min = "1KiB", max = "9KiB" }
batch_size = 1
epochs = 3
[[job]]
name = "other"
samples = 5
size = "2KiB"
batch_size = 1
epochs = 2
)";

Trace MakeTrace(const char* text) {
  auto w = ParseWorkload(text, "w.toml");
  EXPECT_TRUE(w.ok()) << w.status().message();
  auto t = Trace::Make(w.value());
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

TEST(OrdersJson, HoldsTheTracesSizesAndEveryEpochsOrder) {
  const Trace t = MakeTrace(kTwoJobs);
  const auto doc = nlohmann::json::parse(FormatOrdersJson(t, "w.toml"));
  EXPECT_EQ(doc["workload"], "w.toml");
  EXPECT_EQ(doc["seed"], 3u);
  EXPECT_EQ(doc["budget_bytes"].get<uint64_t>(), t.budget());
  ASSERT_EQ(doc["jobs"].size(), 2u);
  for (size_t j = 0; j < 2; ++j) {
    const auto& job = doc["jobs"][j];
    const JobSpecW& spec = t.workload().jobs[j];
    EXPECT_EQ(job["name"], spec.name);
    ASSERT_EQ(job["sizes"].size(), spec.samples);
    uint64_t total = 0;
    for (uint32_t s = 0; s < spec.samples; ++s) {
      EXPECT_EQ(job["sizes"][s].get<uint64_t>(), t.size(j, s));
      total += t.size(j, s);
    }
    EXPECT_EQ(total, t.datasets()[t.dataset_of(j)].total_bytes);
    ASSERT_EQ(job["orders"].size(), spec.epochs);
    for (uint32_t e = 0; e < spec.epochs; ++e) {
      const auto order = job["orders"][e].get<std::vector<uint32_t>>();
      EXPECT_EQ(order, t.Order(j, e)) << spec.name << " epoch " << e;
      EXPECT_EQ(std::set<uint32_t>(order.begin(), order.end()).size(), spec.samples);
    }
  }
  // Epochs are shuffled apart (12 samples: equal orders would be a bug, not luck).
  EXPECT_NE(doc["jobs"][0]["orders"][0], doc["jobs"][0]["orders"][1]);
}

TEST(OrdersJson, FollowsTheSeed) {
  const Trace a = MakeTrace(kTwoJobs);
  const std::string ja = FormatOrdersJson(a, "w");
  EXPECT_EQ(ja, FormatOrdersJson(MakeTrace(kTwoJobs), "w"));
  std::string other = kTwoJobs;
  other.replace(other.find("seed = 3"), 8, "seed = 4");
  EXPECT_NE(ja, FormatOrdersJson(MakeTrace(other.c_str()), "w"));
}

}  // namespace epochfs::sim::orders_test
