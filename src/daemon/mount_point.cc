#include "mount_point.h"

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace epochfs {
namespace {

// Undoes mountinfo's escapes: \ooo (three octal digits) is one byte.
std::string Unescape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const char a = s[i + 1], b = s[i + 2], c = s[i + 3];
      if (a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out.push_back(static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

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

std::vector<MountEntry> ReadMountInfo(const std::string& path) {
  std::vector<MountEntry> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mount_point options [optional...] - fstype source super
    std::istringstream f(line);
    std::string id, parent, devno, root, point, field;
    if (!(f >> id >> parent >> devno >> root >> point)) continue;
    while (f >> field && field != "-") {
    }
    MountEntry e;
    e.id = id;
    e.mount_point = Unescape(point);
    e.devno = devno;
    f >> e.fstype >> e.source;
    e.source = Unescape(e.source);
    out.push_back(std::move(e));
  }
  return out;
}

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
