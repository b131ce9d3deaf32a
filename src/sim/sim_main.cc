#include "epochfs/sim/sim_main.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "epochfs/common/text_file.h"
#include "epochfs/sim/engine.h"
#include "epochfs/sim/replay.h"
#include "epochfs/sim/report.h"
#include "epochfs/sim/trace.h"
#include "epochfs/sim/workload.h"

namespace epochfs::sim {
namespace {

int Fail(const std::string& msg, int code = 1) {
  std::fprintf(stderr, "epochfs sim: %s\n", msg.c_str());
  return code;
}

// `epochfs sim --replay TRACE`: the live run's figures, then each policy's.
int ReplayMain(const std::string& path, const std::vector<PolicyKind>& kinds, bool json) {
  auto text = ReadTextFile(path, "trace file");
  if (!text.ok()) return Fail(text.status().message());
  auto events = trace::ParseTrace(text.value());
  if (!events.ok()) return Fail(path + ": " + events.status().message());
  std::vector<ReplayResult> runs;
  for (PolicyKind k : kinds) {
    auto r = Replay(events.value(), k);
    if (!r.ok()) return Fail(std::string(PolicyKindName(k)) + ": " + r.status().message(), 2);
    runs.push_back(std::move(r).value());
  }
  const TraceSummary live = Summarize(events.value());
  const std::string out = json ? FormatReplayJson(path, live, runs)
                               : FormatReplayTable(path, live, runs);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"epochfs sim: replay a multi-job workload through the cache policies"};
  app.name("epochfs sim");
  std::string file;
  std::string policies = "all";
  bool json = false;
  bool orders = false;
  std::optional<uint64_t> seed;
  std::optional<double> budget_percent;
  std::optional<uint32_t> prefetch;
  std::optional<uint32_t> read_slots;
  std::optional<bool> weigh_hits;
  std::optional<std::string> request_bytes;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::string replay;
  app.add_option("WORKLOAD", file, "workload TOML file (see epochfs(8), SIMULATOR)");
  app.add_option("--replay", replay,
                 "replay a policy trace the daemon recorded (trace.file) instead of a workload");
  app.add_option("--policy", policies,
                 "all, or a comma-separated list of none, lru, minio, epoch, future, belady");
  app.add_flag("--json", json, "print JSON instead of the table");
  app.add_flag("--orders", orders,
               "print each job's sample sizes and epoch orders as JSON and simulate nothing");
  app.add_option("--seed", seed, "override the workload's seed");
  app.add_option("--prefetch", prefetch,
                 "override the workload's prefetch (requests in flight; 0: off)")
      ->check(CLI::Range(0, 64));
  app.add_option("--read-slots", read_slots,
                 "override the workload's read_slots (the daemon's lower.read_slots; 0: off)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--weigh-hits", weigh_hits,
                 "override the workload's weigh_hits (the daemon's cache.weigh_hits: true/false)");
  app.add_option("--request-bytes", request_bytes,
                 "override the workload's request_bytes: \"auto\" or bytes (an integer)");
  app.add_option("--budget-percent", budget_percent,
                 "override the workload's budget: a percentage of the distinct data")
      ->check(CLI::Range(0.001, 1000.0));
  app.add_option("-j,--jobs", threads, "policies simulated in parallel")
      ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return Fail(std::string(e.what()) + " (see epochfs sim --help)");
  }

  std::vector<PolicyKind> kinds;
  if (policies == "all") {
    kinds = AllPolicyKinds();
  } else {
    std::stringstream ss(policies);
    std::string name;
    while (std::getline(ss, name, ',')) {
      auto k = ParsePolicyKind(name);
      if (!k.ok()) return Fail("--policy: " + k.status().message());
      if (std::find(kinds.begin(), kinds.end(), k.value()) == kinds.end())
        kinds.push_back(k.value());
    }
    if (kinds.empty()) return Fail("--policy: empty list");
  }
  if (file.empty() == replay.empty()) {
    return Fail("give a WORKLOAD file or --replay TRACE, not both (see epochfs sim --help)");
  }
  if (!replay.empty()) {
    if (orders) return Fail("--orders takes a WORKLOAD file, not --replay");
    return ReplayMain(replay, kinds, json);
  }

  auto wl = LoadWorkloadFile(file);
  if (!wl.ok()) return Fail(wl.status().message());
  Workload w = std::move(wl).value();
  if (seed) w.seed = *seed;
  if (prefetch) w.prefetch = *prefetch;
  if (read_slots) w.read_slots = *read_slots;
  if (weigh_hits) w.weigh_hits = *weigh_hits;
  if (request_bytes) {
    w.request_bytes_auto = *request_bytes == "auto";
    if (!w.request_bytes_auto) {
      char* end = nullptr;
      const unsigned long long b = std::strtoull(request_bytes->c_str(), &end, 10);
      if (request_bytes->empty() || *end != '\0' || b > (1ull << 30)) {
        return Fail("--request-bytes: \"auto\" or an integer of bytes up to 1073741824");
      }
      w.request_bytes = b;
    }
  }
  if (budget_percent) {
    w.budget_is_percent = true;
    w.budget_percent = *budget_percent;
    w.budget_bytes = 0;
  }
  auto trace = Trace::Make(w);
  if (!trace.ok()) return Fail(trace.status().message());
  if (orders) {
    const std::string out = FormatOrdersJson(trace.value(), file);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }

  std::vector<std::optional<Result<RunResult>>> results(kinds.size());
  std::vector<double> wall(kinds.size(), 0);
  std::vector<std::thread> pool;
  size_t next = 0;
  std::mutex mu;
  auto worker = [&] {
    for (;;) {
      size_t i;
      {
        std::lock_guard lock(mu);
        if (next >= kinds.size()) return;
        i = next++;
      }
      const auto t0 = std::chrono::steady_clock::now();
      Result<RunResult> r = Run(trace.value(), kinds[i]);
      wall[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard lock(mu);
      results[i].emplace(std::move(r));
    }
  };
  const size_t n_threads = std::min<size_t>(threads, kinds.size());
  for (size_t t = 1; t < n_threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();

  std::vector<RunResult> runs;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (!results[i]->ok()) {
      return Fail(std::string(PolicyKindName(kinds[i])) + ": " + results[i]->status().message(), 2);
    }
    runs.push_back(std::move(*results[i]).value());
    std::fprintf(stderr, "epochfs sim: %s: %.2f s wall, %llu events\n", PolicyKindName(kinds[i]),
                 wall[i], static_cast<unsigned long long>(runs.back().events));
  }
  const std::string out =
      json ? FormatJson(trace.value(), file, runs) : FormatTable(trace.value(), file, runs);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace epochfs::sim
