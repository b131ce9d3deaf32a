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
// The remedy named is `fusermount3 -u MOUNTPOINT`, or `umount -R MOUNTPOINT`
// when mounts lie beneath it (a killed fuse.no_open daemon leaves its
// .epochfs and .spill sessions there, and fusermount3 -u fails with EBUSY).
// Errors: NotFound / InvalidArgument with one line that names
// the path and the remedy.
// MaxReadOption reads `-o max_read=` before the mount; ProbeMount asks the
// mount, once made, whether it answers.
#pragma once

#include <string>
#include <vector>

#include "epochfs/common/mount_info.h"
#include "epochfs/common/status.h"
#include "epochfs/config/config.h"

namespace epochfs {

// realpath of both; a missing path is NotFound naming it as `what`.
Status CanonicalPaths(std::string* lower, std::string* mountpoint);

// REQUIRES: both canonical (CanonicalPaths).
Status CheckMountPoint(const std::string& lower, const std::string& mountpoint,
                       const std::vector<MountEntry>& mounts);

// The value of `-o max_read=BYTES` among the FUSE options (0 when absent);
// InvalidArgument outside 4096..1 GiB.
Result<unsigned> MaxReadOption(const std::vector<std::string>& fuse_opts);

// Reads MOUNTPOINT/.epochfs/version through the kernel: the mount is in place
// and INIT was accepted (IoError "mount at ... does not answer: why" if not).
// Runs beside the session loop.
Status ProbeMount(const std::string& mountpoint);

// fuse.no_open: what it needs (nested_mount.h: root, or allow_other) and
// cannot combine with (no kernel_cache). NotPermitted or InvalidArgument.
Status CheckNoOpen(const Config& cfg);

}  // namespace epochfs
