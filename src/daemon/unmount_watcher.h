// UnmountWatcher: `-o auto_unmount`, kept by epochfs itself.
//
// A small process forked right after the mount waits for the daemon to end,
// however it ends (SIGKILL, a crash, a clean exit), and then lazily unmounts
// the mount the daemon made, if it is still there: it knows that mount by its
// id in /proc/self/mountinfo, so a later mount on the same directory is never
// touched. Root unmounts with umount2(MNT_DETACH); another user runs
// `fusermount3 -u -z`.
//
// Why not libfuse's auto_unmount: its helper wakes when the daemon's socket
// closes and unmounts only if opening the mountpoint then fails with
// ENOTCONN. A dying daemon closes its descriptors in ascending order, the
// socket before the cloned /dev/fuse descriptors of the worker threads, so
// the open can still succeed and the dead mount stays (seen about once in
// ten SIGKILLs on a loaded 2-core machine).
//
// The watcher has a name of its own, so that `pgrep -x epochfs | head -1`
// or `killall epochfs` never picks it for the daemon: argv
// "epochfs-unmount-watcher MOUNTPOINT ID" (it re-executes the daemon's binary
// under that name: UnmountWatcherMain) and comm "epochfs-unmount".
// The watcher holds no descriptor but its end of a pipe (0, 1, 2 are
// /dev/null), ignores
// SIGINT, SIGTERM and SIGHUP (a Ctrl-C to the process group must not kill it
// before the daemon has unmounted), and leaves its session.
// Errors: Start fails (IoError) when the mount cannot be found in mountinfo
// or the fork fails; the mount is then left as it is.
#pragma once

#include <string>

#include "epochfs/common/status.h"

namespace epochfs {

// REQUIRES: `mountpoint` canonical and mounted by this process just now; no
// threads started yet (it forks).
Status StartUnmountWatcher(const std::string& mountpoint);

}  // namespace epochfs
