// `epochfs top [--interval S] [--once] [--frames N] MOUNTPOINT`: a live view
// of a mount (its stats, rates since the last frame, one row per job; see
// top_view.h), redrawn every S seconds (1) until Ctrl-C. On a terminal each
// frame replaces the last; otherwise, or with --once, frames are printed one
// after another (--once: one frame, then exit). Any path inside the mount
// will do. Returns 0; 1 with one line "epochfs top: ..." when the path is
// not in a mount, the stats cannot be read (the mount went away) or an
// argument is bad.
#pragma once

namespace epochfs::tools {

// REQUIRES: argv[0] is the subcommand name ("top").
int TopMain(int argc, char** argv);

}  // namespace epochfs::tools
