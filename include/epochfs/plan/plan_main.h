// `epochfs plan MODEL.toml [--device-memory SIZE] [--reserve SIZE] [--gpus N]
//  [--base-batch B] [--base-lr LR] [--json]`: the command line of the planner
// (epochfs-plan(1)). Flags override the model file's [device] and [training]
// values. Prints a short table (or one JSON object with --json) on success and
// returns 0; on any error prints one line per problem, "epochfs plan: ...", to
// the error stream and returns 1 (help: 0).
//
// Thread safety: writes only to the given streams; not reentrant with respect
// to them.
#pragma once

#include <iosfwd>

namespace epochfs::plan {

// REQUIRES: argv[0] is the subcommand name ("plan"), as src/main.cc passes it.
int Main(int argc, char** argv);
// Main with the streams given (for tests).
int Run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace epochfs::plan
