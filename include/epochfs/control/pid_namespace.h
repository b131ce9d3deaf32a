// PidsOfWriter: the pids a process wrote into a job's `pids` file, as the
// daemon's pid namespace numbers them.
//
// A process in a pid namespace of its own (a container) knows itself and its
// neighbours by that namespace's numbers: EpochfsSampler in a container
// writes its own pid, often 1. Read in the daemon's namespace, that number
// names another process (host pid 1, the ancestor of everything). FUSE gives
// the daemon the writer's pid in the daemon's namespace, and /proc tells the
// writer's namespace (ns/pid) and each process's pid in every namespace it
// is in (the NSpid line of status). So:
//   - writer <= 0 (FUSE cannot tell), or the writer in the daemon's own
//     namespace: the pids as written;
//   - else each pid is looked up among the processes of the writer's
//     namespace: the writer itself, or a process whose innermost pid is
//     that number; one that is not there is InvalidArgument naming it.
// Processes in namespaces nested below the writer's are not searched (a
// writer registers itself or its own container's processes).
// Cost: one scan of /proc per write from another namespace, none otherwise.
// Thread safety: none needed (reads /proc only).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs::control {

Result<std::vector<pid_t>> PidsOfWriter(const std::vector<pid_t>& written, pid_t writer,
                                        const std::string& proc_root = "/proc");

}  // namespace epochfs::control
