// `epochfs sim WORKLOAD.toml [--policy all|none|lru|minio|epoch|belady] [--json] [--seed N]`
//
// Entry point of the simulator subcommand: src/main.cc calls it with argv[0]
// = "sim". Loads the workload (errors name key and line), replays it through
// the chosen policies (in parallel threads, one per policy, at most --jobs at a
// time) and prints the table or the JSON on stdout. Exit status: 0 on success,
// 1 for a bad workload or option, 2 if a run failed (a policy broke an
// invariant). Wall times of the runs go to stderr (the output stays
// deterministic).
#pragma once

namespace epochfs::sim {

int Main(int argc, char** argv);

}  // namespace epochfs::sim
