#include "epochfs/store/lower.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace epochfs::store {

Status StatusFromErrno(int err, const std::string& what) {
  std::string msg = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case ELOOP:
    case EXDEV:  // RESOLVE_BENEATH refused an escape
      return NotFound(std::move(msg));
    case EACCES:
      return PermissionDenied(std::move(msg));
    case EPERM:
      return NotPermitted(std::move(msg));
    case ENAMETOOLONG:
      return InvalidArgument(std::move(msg));
    default:
      return IoError(std::move(msg));
  }
}

Result<std::unique_ptr<Lower>> Lower::Open(const std::string& root) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return StatusFromErrno(errno, root);
  return std::unique_ptr<Lower>(new Lower(root, UniqueFd(fd)));
}

Result<UniqueFd> Lower::OpenBeneath(const std::string& rel, int flags) const {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC | O_NOFOLLOW);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const char* p = rel.empty() ? "." : rel.c_str();
  long fd = ::syscall(SYS_openat2, root_fd_.get(), p, &how, sizeof(how));
  if (fd < 0 && errno == EAGAIN) {  // a concurrent rename raced the lookup
    fd = ::syscall(SYS_openat2, root_fd_.get(), p, &how, sizeof(how));
  }
  if (fd < 0) return StatusFromErrno(errno, rel.empty() ? "." : rel);
  return UniqueFd(static_cast<int>(fd));
}

Result<struct stat> Lower::Stat(const std::string& rel) const {
  auto fd = OpenBeneath(rel, O_PATH);
  if (!fd.ok()) return fd.status();
  struct stat st;
  if (::fstat(fd.value().get(), &st) != 0) return StatusFromErrno(errno, rel);
  return st;
}

Result<std::vector<DirEntry>> Lower::List(const std::string& rel) const {
  auto fd = OpenBeneath(rel, O_RDONLY | O_DIRECTORY);
  if (!fd.ok()) return fd.status();
  int dfd = fd.value().release();
  DIR* dir = ::fdopendir(dfd);
  if (dir == nullptr) {
    int err = errno;
    ::close(dfd);
    return StatusFromErrno(err, rel);
  }
  std::vector<DirEntry> out;
  errno = 0;
  while (struct dirent* de = ::readdir(dir)) {
    if (std::strcmp(de->d_name, ".") == 0 || std::strcmp(de->d_name, "..") == 0) continue;
    DirEntry e;
    e.name = de->d_name;
    if (::fstatat(::dirfd(dir), de->d_name, &e.st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    out.push_back(std::move(e));
    errno = 0;
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return StatusFromErrno(err, rel);
  return out;
}

Result<std::string> Lower::ReadLink(const std::string& rel) const {
  auto fd = OpenBeneath(rel, O_PATH);
  if (!fd.ok()) return fd.status();
  char buf[PATH_MAX];
  ssize_t n = ::readlinkat(fd.value().get(), "", buf, sizeof(buf));
  if (n < 0) return StatusFromErrno(errno, rel);
  return std::string(buf, static_cast<size_t>(n));
}

Result<struct statvfs> Lower::StatFs() const {
  struct statvfs sv;
  if (::fstatvfs(root_fd_.get(), &sv) != 0) return StatusFromErrno(errno, root_path_);
  return sv;
}

Result<UniqueFd> Lower::OpenFile(const std::string& rel) const {
  return OpenBeneath(rel, O_RDONLY);
}

Result<std::vector<char>> Lower::ReadWhole(int fd, uint64_t size) const {
  std::vector<char> data(size);
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, data.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return StatusFromErrno(errno, "read");
    }
    if (n == 0) return IoError("lower file shrank while being read");
    done += static_cast<uint64_t>(n);
  }
  // A file that grew since its stat would be served truncated: refuse it.
  char extra;
  ssize_t n = ::pread(fd, &extra, 1, static_cast<off_t>(size));
  if (n > 0) return IoError("lower file grew while being read");
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  return data;
}

Result<size_t> Lower::ReadAt(int fd, char* buf, size_t len, uint64_t off) const {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, buf + done, len - done, static_cast<off_t>(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return StatusFromErrno(errno, "read");
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  ::posix_fadvise(fd, static_cast<off_t>(off), static_cast<off_t>(done), POSIX_FADV_DONTNEED);
  return done;
}

}  // namespace epochfs::store
