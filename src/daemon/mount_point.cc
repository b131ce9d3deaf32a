#include "mount_point.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace epochfs {
namespace {

// `path` made absolute without resolving it (it may be a dead mount).
std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

// How to unmount what is mounted at `mountpoint`: fusermount3 -u, or umount
// -R when mounts lie beneath it (fuse.no_open's .epochfs and .spill): then
// fusermount3 -u fails with EBUSY.
std::string UnmountAdvice(const std::string& mountpoint, const std::vector<MountEntry>& mounts) {
  const std::string below = mountpoint == "/" ? "/" : mountpoint + "/";
  for (const MountEntry& m : mounts) {
    if (m.mount_point.compare(0, below.size(), below) == 0 && m.mount_point != mountpoint) {
      return "umount -R " + mountpoint + " (mounts lie beneath it, such as " + m.mount_point +
             ": fusermount3 -u would fail with EBUSY)";
    }
  }
  return "fusermount3 -u " + mountpoint;
}

Status Canonical(const char* what, std::string* path) {
  char real[PATH_MAX];
  if (::realpath(path->c_str(), real) == nullptr) {
    const int e = errno;
    std::string msg = std::string(what) + " " + *path + ": " + std::strerror(e);
    if (e == ENOTCONN) {
      msg += " (a dead FUSE mount? unmount it first: " +
             UnmountAdvice(Absolute(*path), ReadMountInfo()) + ")";
    }
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
                           "); unmount it first (" + UnmountAdvice(mountpoint, mounts) + ")");
    }
  }
  return Status::Ok();
}

// The value of `-o max_read=BYTES` among the FUSE options (0 when absent).
Result<unsigned> MaxReadOption(const std::vector<std::string>& fuse_opts) {
  unsigned value = 0;
  for (const std::string& o : fuse_opts) {
    if (o.rfind("max_read=", 0) != 0) continue;
    const std::string v = o.substr(9);
    unsigned long long n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 4096 || n > (1u << 30)) {
      return InvalidArgument("-o " + o + ": max_read is a byte count from 4096 to 1073741824");
    }
    value = static_cast<unsigned>(n);
  }
  return value;
}

// Reads MOUNTPOINT/.epochfs/version through the kernel: the mount is in place
// and INIT was accepted. Runs beside the session loop.
Status ProbeMount(const std::string& mountpoint) {
  const std::string path = mountpoint + "/.epochfs/version";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(Code::kIoError, errno, "mount at " + mountpoint + " does not answer");
  char buf[64];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  const int e = errno;
  ::close(fd);
  if (n <= 0) {
    return IoError("mount at " + mountpoint + " does not answer: " +
                   (n < 0 ? std::strerror(e) : "empty version file"));
  }
  return Status::Ok();
}

Status CheckNoOpen(const Config& cfg) {
  if (!cfg.fuse.no_open) return Status::Ok();
  const std::string k = "fuse.no_open = true ";
  // The control directory (and spill area) are mounts inside the mount: by
  // the daemon itself as root, else by the set-uid fusermount3, which the
  // kernel lets into a FUSE mount only with allow_other.
  if (::geteuid() != 0 && !cfg.fuse.allow_other) {
    return NotPermitted(k + "needs root, or fuse.allow_other = true (user_allow_other in /etc/fuse.conf): the control directory is a mount of its own inside the mount, which fusermount3 mounts for a user only on a mount it may enter");
  }
  if (!cfg.fuse.kernel_cache) {
    return InvalidArgument(k + "needs fuse.kernel_cache = true (the kernel's pages are the hot path)");
  }
  return Status::Ok();
}

}  // namespace epochfs
