// VersionRule (version.h).
#include "epochfs/store/version.h"

#include <sys/vfs.h>

namespace epochfs::store {
namespace {

constexpr long kFuseSuperMagic = 0x65735546;  // linux/magic.h FUSE_SUPER_MAGIC

int64_t Ns(const struct timespec& t) { return t.tv_sec * 1'000'000'000LL + t.tv_nsec; }

}  // namespace

VersionRule VersionRule::ForFileSystemOf(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return VersionRule(true);
  return VersionRule(static_cast<long>(fs.f_type) != kFuseSuperMagic);
}

Version VersionRule::Of(const struct stat& st) const {
  return {static_cast<uint64_t>(st.st_size), Ns(st.st_mtim), Ns(st.st_ctim),
          stable_inodes_ ? static_cast<uint64_t>(st.st_ino) : 0};
}

}  // namespace epochfs::store
