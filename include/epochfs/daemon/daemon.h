// Daemon: the composition root. Builds the lower reader, the policy, the
// cache front, the control tree and the FUSE filesystem from a Config, mounts,
// serves, and tears everything down in reverse order.
// Thread safety: one thread calls Run().
#pragma once

#include <string>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/config/config.h"

namespace epochfs {

struct DaemonArgs {
  std::string lower;
  std::string mountpoint;
  Config config;
  std::vector<std::string> fuse_opts;  // passed to the kernel mount
  bool foreground = false;
  bool debug = false;
};

// Mounts and serves until unmounted or signalled. Errors before the mount is
// up are returned; the caller prints them as one line.
Status RunDaemon(const DaemonArgs& args);

// The auto_unmount watcher's argv[0] (src/daemon/unmount_watcher.h): main()
// hands such a process to UnmountWatcherMain, which returns only on misuse
// (not started by the daemon: 2).
inline constexpr char kUnmountWatcherName[] = "epochfs-unmount-watcher";
int UnmountWatcherMain(int argc, char** argv);

// The budget "auto" falls back to when the memory governor is off: half of
// the available memory as governor::Sampler reads it (MemAvailable, or less
// in a memory cgroup), at least 64 MiB (the floor when nothing can be read).
uint64_t AutoBudget();

}  // namespace epochfs
