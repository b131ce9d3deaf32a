// Lower: read-only access to the dataset directory on slow storage.
//
// Every path is relative to the lower root ("" is the root itself) and is
// resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a lower path
// never escapes the root and never follows a symlink, even if the lower tree
// changes underneath. Reads drop the lower file's pages from the host page
// cache afterwards (POSIX_FADV_DONTNEED), so the only cached copy of a sample
// is the one epochfs accounts for.
// Errors: NotFound (ENOENT, ENOTDIR, ELOOP), PermissionDenied, IoError
// (everything else, including a file that shrank while being read).
// Thread safety: all methods are thread-safe; Lower holds only the root fd.
#pragma once

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/common/unique_fd.h"

namespace epochfs::store {

struct DirEntry {
  std::string name;
  struct stat st;
};

class Lower {
 public:
  // Opens ROOT, which must be a readable directory.
  static Result<std::unique_ptr<Lower>> Open(const std::string& root);

  const std::string& root() const { return root_path_; }

  Result<struct stat> Stat(const std::string& rel) const;
  // Entries of directory `rel` with their lstat, without "." and "..".
  // Entries that vanish between readdir and stat are skipped.
  Result<std::vector<DirEntry>> List(const std::string& rel) const;
  Result<std::string> ReadLink(const std::string& rel) const;
  Result<struct statvfs> StatFs() const;

  // Opens regular file `rel` for reading.
  Result<UniqueFd> OpenFile(const std::string& rel) const;
  // Reads exactly `size` bytes from the start of `fd`; a short file is IoError.
  Result<std::vector<char>> ReadWhole(int fd, uint64_t size) const;
  // pread of up to `len` bytes at `off` into `buf`; returns bytes read.
  Result<size_t> ReadAt(int fd, char* buf, size_t len, uint64_t off) const;

 private:
  Lower(std::string path, UniqueFd fd) : root_path_(std::move(path)), root_fd_(std::move(fd)) {}
  Result<UniqueFd> OpenBeneath(const std::string& rel, int flags) const;

  std::string root_path_;
  UniqueFd root_fd_;
};

// errno from a failed lower syscall → Status (NotFound, PermissionDenied, IoError).
Status StatusFromErrno(int err, const std::string& what);

}  // namespace epochfs::store
