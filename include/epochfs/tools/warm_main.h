// `epochfs warm [-j N] [--quiet] [--background] PATH...` and
// `epochfs warm ... --from LIST MOUNTPOINT`: loads files of an epochfs mount
// into its cache before training starts (as JuiceFS `warmup` or Alluxio
// `load` do): every regular file under each PATH, or under each line of LIST
// (relative to the mount's root; warm_list.h), a file or a directory inside
// one mount (`.epochfs` and `.spill` skipped, symlinks not followed, each file
// once), is read through the mount by N threads (4), so the daemon admits it
// as it admits any unregistered reader's file, under the budget and the
// policy. Progress: a line on a terminal's stderr (files, bytes, rate), and
// reports to the mount (warm_report.h: stats' "warm" rows, `epochfs top`).
// At the end one line on stdout: files and bytes read, the time (the walk
// included, and given apart), the cache's use before and after, with a note
// when the files are larger than the budget. --background forks after the
// checks; the caller returns 0 once the child has reported once.
// Returns 0; 1 when a PATH is not in a mount, a LIST line is bad or names
// nothing, or any file could not be read (each named on stderr, "epochfs
// warm: [LIST:N: ]PATH: reason"); the others are still read.
#pragma once

namespace epochfs::tools {

// REQUIRES: argv[0] is the subcommand name ("warm").
int WarmMain(int argc, char** argv);

}  // namespace epochfs::tools
