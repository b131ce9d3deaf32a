// Report: simulator results as a text table or as JSON (nlohmann_json).
//
// Both are deterministic functions of the results (no wall-clock figures), so
// the same workload and seed print the same bytes. Times are printed in
// seconds; the JSON also carries the exact nanoseconds.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "epochfs/sim/engine.h"
#include "epochfs/sim/trace.h"

namespace epochfs::sim {

// Per job and per policy: accesses, hits, hit ratio, stall, completion, epoch
// times; then per policy: makespan, total stall, hit ratio, bytes from storage.
std::string FormatTable(const Trace& trace, const std::string& origin,
                        const std::vector<RunResult>& runs);
// {"workload": {...}, "runs": [{"policy": ..., "jobs": [...]}, ...]}, indented.
std::string FormatJson(const Trace& trace, const std::string& origin,
                       const std::vector<RunResult>& runs);
// What the trace expands to, for a real run to read the same workload
// (`epochfs sim WORKLOAD --orders`): {"workload": origin, "seed": ..., "budget_bytes": ...,
// "jobs": [{"name", "dataset", "sizes": [bytes of sample k], "orders": [[epoch 0's
// samples in reading order], ...]}]}, one order per epoch. Its size grows with
// samples x epochs: meant for small workloads.
std::string FormatOrdersJson(const Trace& trace, const std::string& origin);

}  // namespace epochfs::sim
