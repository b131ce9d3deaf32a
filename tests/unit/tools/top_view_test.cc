#include "epochfs/tools/top_view.h"

#include <gtest/gtest.h>

#include <string>

namespace epochfs::tools {
namespace {

bool Has(const std::string& frame, const std::string& what) {
  return frame.find(what) != std::string::npos;
}

const char* kBefore = R"({"version": "0.1.0", "policy": "epoch", "budget": 1073741824,
  "used": 0, "hits": 100, "misses": 100, "bytes_read_lower": 0, "jobs": [],
  "lower_calls_by_kind": {"lookup": 10, "open": 5}})";
const char* kNow = R"({"version": "0.1.0", "policy": "epoch", "budget": 1073741824,
  "used": 536870912, "pool": 0, "shared": 0, "objects": 7, "hits": 400, "misses": 200,
  "coalesced": 100, "refills": 20,
  "bytes_read_lower": 20971520, "lower_in_flight": 2, "lower_errors": 1, "lower_down": true,
  "lower_calls_by_kind": {"lookup": 30, "stat": 0, "open": 105, "read": 100, "list": 1},
  "warnings": ["cache need over\nbudget"],
  "tiers": {"ram": {"bytes": 1}, "spill": {"files": 3, "logical_bytes": 2048,
            "stored_bytes": 1024, "dirty_bytes": 0}},
  "governor": {"budget": 1073741824, "non_cache": 1048576, "urgent": true,
               "fit": {"plateau": false}},
  "jobs": [{"name": "resnet", "state": "caching", "epoch": 3, "batch": 12, "hits": 90,
            "misses": 10, "coalesced": 20, "lower_wait_s": 1.25, "cur_bytes": 1048576, "next_bytes": 2097152}]})";

TEST(RenderTop, AWarmShowsFilesAndBytesDoneOfTotal) {
  nlohmann::json now = nlohmann::json::parse(kBefore);
  now["warm"] = nlohmann::json::parse(R"([
    {"pid": 4242, "state": "reading", "running": true, "files_done": 12, "files_total": 30,
     "bytes_done": 1048576, "bytes_total": 4194304, "errors": 1},
    {"pid": 7, "state": "done", "running": false, "files_done": 3, "files_total": 3,
     "bytes_done": 10, "bytes_total": 10, "errors": 0}])");
  const std::string f = RenderTop(now, nullptr, 0, "/m");
  EXPECT_TRUE(Has(f, "warm: pid 4242 reading   12/30 files   1.0 MiB of 4.0 MiB (25.0%)   "
                     "1 errors\n")) << f;
  EXPECT_TRUE(Has(f, "warm: pid 7 done (exited)   3/3 files")) << f;
  EXPECT_FALSE(Has(RenderTop(nlohmann::json::parse(kBefore), nullptr, 0, "/m"), "warm:"));
}

TEST(RenderTop, RatesComeFromTwoSnapshots) {
  const auto before = nlohmann::json::parse(kBefore), now = nlohmann::json::parse(kNow);
  const std::string f = RenderTop(now, &before, 10.0, "/mnt/data");
  EXPECT_TRUE(Has(f, "epochfs 0.1.0 on /mnt/data   policy epoch")) << f;
  EXPECT_TRUE(Has(f, "budget 1.0 GiB   used 512.0 MiB (50.0%)")) << f;
  // 300 hits, 100 misses, 100 joined loads and 20 refills in 10 s: the
  // reads that waited are no hits. 2 MiB/s from lower.
  EXPECT_TRUE(Has(f, "hits 30/s   misses 10/s   joined 10/s   refills 2/s   hit ratio 57.7% "
                     "(all 55.6%)   from lower 2.0 MiB/s")) << f;
  EXPECT_TRUE(Has(f, "lower: DOWN   in flight 2   errors 1")) << f;
  EXPECT_TRUE(Has(f, "lower calls:   lookup 2/s   stat 0/s   open 10/s   read 10/s   list 0/s\n"))
      << f;
  EXPECT_TRUE(Has(f, "spill: 3 files, 2.0 KiB stored as 1.0 KiB")) << f;
  EXPECT_TRUE(Has(f, "governor: budget 1.0 GiB   non-cache 1.0 MiB   rising   URGENT")) << f;
  EXPECT_TRUE(Has(f, "warning: cache need over?budget\n")) << f;
  EXPECT_TRUE(Has(f, "resnet                   caching         3      12        90        10"
                     "      20   75.0%     1.2s     1.0 MiB     2.0 MiB\n")) << f;
}

TEST(RenderTop, FirstFrameHasNoRatesAndNoJobsSaysSo) {
  const auto before = nlohmann::json::parse(kBefore);
  const std::string f = RenderTop(before, nullptr, 0, "/m");
  EXPECT_TRUE(Has(f, "hits -   misses -   joined -   refills -   hit ratio - (all 50.0%)   from lower -")) << f;
  EXPECT_TRUE(Has(f, "(no jobs registered)")) << f;
  EXPECT_FALSE(Has(f, "spill:")) << f;
  EXPECT_FALSE(Has(f, "governor:")) << f;
}

TEST(RenderTop, LinesAreCutToTheWidthAndGarbageIsHarmless) {
  const auto now = nlohmann::json::parse(kNow);
  const std::string f = RenderTop(now, nullptr, 0, "/m", 40);
  size_t start = 0;
  for (size_t nl; (nl = f.find('\n', start)) != std::string::npos; start = nl + 1) {
    EXPECT_LE(nl - start, 40u) << f.substr(start, nl - start);
  }
  // Counters going backwards (a restart) or of the wrong type do not wrap.
  const auto odd = nlohmann::json::parse(R"({"hits": "x", "misses": -5, "jobs": [1, {}]})");
  const std::string g = RenderTop(odd, &now, 1.0, "/m");
  EXPECT_TRUE(Has(g, "hits 0/s   misses 0/s")) << g;
  EXPECT_NO_THROW(RenderTop(nlohmann::json::parse("[]"), nullptr, 0, "/m"));
}

}  // namespace
}  // namespace epochfs::tools
