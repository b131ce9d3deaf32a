#include "mount_point.h"

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace epochfs {
namespace {

Status Canonical(const char* what, std::string* path) {
  char real[PATH_MAX];
  if (::realpath(path->c_str(), real) == nullptr) {
    const int e = errno;
    std::string msg = std::string(what) + " " + *path + ": " + std::strerror(e);
    if (e == ENOTCONN) msg += " (a dead FUSE mount? fusermount3 -u it first)";
    return e == ENOENT ? NotFound(msg) : InvalidArgument(msg);
  }
  *path = real;
  return Status::Ok();
}

}  // namespace

Status CanonicalPaths(std::string* lower, std::string* mountpoint) {
  if (Status s = Canonical("dataset", lower); !s.ok()) return s;
  return Canonical("mountpoint", mountpoint);
}

Status CheckMountPoint(const std::string& lower, const std::string& mountpoint,
                       const std::vector<MountEntry>& mounts) {
  const bool inside = mountpoint == lower || lower == "/" ||
                      (mountpoint.size() > lower.size() &&
                       mountpoint.compare(0, lower.size(), lower) == 0 &&
                       mountpoint[lower.size()] == '/');
  if (inside) {
    return InvalidArgument("mountpoint " + mountpoint + " is inside the dataset " + lower +
                           ": the mount would contain itself; choose a directory outside it");
  }
  for (const MountEntry& m : mounts) {
    if (m.mount_point == mountpoint) {
      return InvalidArgument("mountpoint " + mountpoint + " is already a mount point (" +
                           m.fstype + " of " + m.source +
                           "); unmount it first (fusermount3 -u " + mountpoint + ")");
    }
  }
  return Status::Ok();
}

}  // namespace epochfs
