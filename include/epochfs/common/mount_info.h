// MountInfo: the mounts of /proc/self/mountinfo, parsed once, with the
// kernel's \NNN octal escapes undone (a mount point with a space is
// "\040" there).
// Errors: an unreadable file gives no entries; malformed lines are skipped.
#pragma once

#include <string>
#include <vector>

namespace epochfs {

struct MountEntry {
  std::string id;           // the mount's unique id (first field)
  std::string mount_point;  // unescaped (\040 is a space)
  std::string fstype;       // "ext4", "fuse.epochfs", ...
  std::string source;
  std::string devno;        // "0:52"
};

// The mounts of /proc/self/mountinfo (or `path`), in its order (a later
// mount on the same point comes later).
std::vector<MountEntry> ReadMountInfo(const std::string& path = "/proc/self/mountinfo");

}  // namespace epochfs
