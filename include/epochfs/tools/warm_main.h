// `epochfs warm [-j N] [--quiet] PATH...`: loads files of an epochfs mount
// into its cache before training starts (as JuiceFS `warmup` or Alluxio
// `load` do): every regular file under each PATH (a file or a directory
// inside a mount; `.epochfs` and `.spill` skipped, symlinks not followed) is
// read through the mount by N threads (4), so the daemon admits it as it
// admits any unregistered reader's file, under the budget and the policy.
// A progress line on a terminal's stderr (files, bytes, rate); at the end
// one line on stdout: files and bytes read, time, and the cache's use before
// and after, with a note when the files are larger than the budget. Returns
// 0; 1 when a PATH is not in a mount or any file could not be read (each
// named on stderr, "epochfs warm: PATH: reason"); the others are still read.
#pragma once

namespace epochfs::tools {

// REQUIRES: argv[0] is the subcommand name ("warm").
int WarmMain(int argc, char** argv);

}  // namespace epochfs::tools
