// Mount-point checks made before anything is mounted.
//
// CanonicalPaths makes LOWER and MOUNTPOINT absolute and free of symlinks
// (realpath): the daemon changes its directory to / when it detaches, and the
// unmount at SIGTERM must name the same directory the mount was made on.
// CheckMountPoint refuses what would recurse or stack silently:
//   - MOUNTPOINT equal to LOWER or under it (the mount would show itself),
//   - MOUNTPOINT already the root of a mount (a second epochfs, or any other
//     filesystem: unmount it first),
//   - a dead FUSE mount there (ENOTCONN: `fusermount3 -u` it first).
// Errors: NotFound / InvalidArgument with one line that names
// the path and the remedy.
#pragma once

#include <string>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs {

struct MountEntry {
  std::string id;           // the mount's unique id (first field)
  std::string mount_point;  // unescaped (\040 is a space)
  std::string fstype;       // "ext4", "fuse.epochfs", ...
  std::string source;
  std::string devno;        // "0:52"
};

// The mounts of /proc/self/mountinfo (or `path`), with \NNN octal escapes
// of the kernel undone. Empty when the file cannot be read.
std::vector<MountEntry> ReadMountInfo(const std::string& path = "/proc/self/mountinfo");

// realpath of both; a missing path is NotFound naming it as `what`.
Status CanonicalPaths(std::string* lower, std::string* mountpoint);

// REQUIRES: both canonical (CanonicalPaths).
Status CheckMountPoint(const std::string& lower, const std::string& mountpoint,
                       const std::vector<MountEntry>& mounts);

}  // namespace epochfs
