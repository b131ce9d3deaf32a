#include "epochfs/common/own_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace epochfs {

Result<UniqueFd> OpenOwnFile(const std::string& path, const std::string& what_name,
                             bool truncate) {
  const std::string what = what_name + " " + path + ": ";
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  if (!fd.valid() && errno == ENXIO) {
    return InvalidArgument(what + "not a regular file (a FIFO or a device)");
  }
  if (!fd.valid()) {
    return Status(errno == ENOENT ? Code::kNotFound : Code::kIoError,
                  what + std::strerror(errno) +
                      (errno == ELOOP ? " (a symbolic link is refused)" : ""));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status(Code::kIoError, what + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return InvalidArgument(what + "not a regular file");
  if (st.st_uid != ::geteuid()) {
    return InvalidArgument(what + "owned by uid " + std::to_string(st.st_uid) +
                           ", not by the daemon's user (whoever owns it could read it): "
                           "remove it or name another path");
  }
  if (st.st_nlink != 1) return InvalidArgument(what + "has other hard links");
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0 ||
      (truncate && ::ftruncate(fd.get(), 0) != 0) || ::fchmod(fd.get(), 0600) != 0) {
    return Status(Code::kIoError, what + std::strerror(errno));
  }
  return fd;
}

}  // namespace epochfs
