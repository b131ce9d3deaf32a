#include "epochfs/store/held_dirs.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>

namespace epochfs::store {

int HeldAttrs(int fd, struct stat* st) {
  struct statx sx {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &sx) != 0) return -1;
  *st = {};
  st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  st->st_ino = sx.stx_ino;
  st->st_mode = sx.stx_mode;
  st->st_nlink = sx.stx_nlink;
  st->st_uid = sx.stx_uid;
  st->st_gid = sx.stx_gid;
  st->st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
  st->st_size = static_cast<off_t>(sx.stx_size);
  st->st_blksize = static_cast<blksize_t>(sx.stx_blksize);
  st->st_blocks = static_cast<blkcnt_t>(sx.stx_blocks);
  st->st_atim = {static_cast<time_t>(sx.stx_atime.tv_sec), sx.stx_atime.tv_nsec};
  st->st_mtim = {static_cast<time_t>(sx.stx_mtime.tv_sec), sx.stx_mtime.tv_nsec};
  st->st_ctim = {static_cast<time_t>(sx.stx_ctime.tv_sec), sx.stx_ctime.tv_nsec};
  return 0;
}

std::optional<HeldDirs::Held> HeldDirs::Open(int root, const std::string& dir) {
  // Beneath the parent's held descriptor: one lookup (the last name) rather
  // than one per component.
  int at = root;
  std::string name = dir;
  std::shared_ptr<const UniqueFd> parent;
  if (const DirAndName dn = SplitRel(dir);
      !dn.dir.empty() && std::count(dir.begin(), dir.end(), '/') < kParentDepth) {
    parent = Get(root, dn.dir);
    if (parent != nullptr) {
      at = parent->get();
      name = dn.name;
    }
  }
  struct open_how how {};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const long fd = ::syscall(SYS_openat2, at, name.c_str(), &how, sizeof(how));
  if (fd < 0) return std::nullopt;
  Held h{std::make_shared<const UniqueFd>(static_cast<int>(fd)), std::nullopt};
  // What the open's lookup just told the kernel: no call of its own.
  struct stat st;
  if (HeldAttrs(static_cast<int>(fd), &st) == 0 && S_ISDIR(st.st_mode)) {
    h.attrs = DirAttrs{st, std::chrono::steady_clock::now()};
  }
  return h;
}

std::shared_ptr<const UniqueFd> HeldDirs::Get(int root, const std::string& dir) {
  {
    std::lock_guard lk(mu_);
    if (auto it = fds_.find(dir); it != fds_.end()) return it->second.fd;
  }
  if (max_ == 0) return nullptr;
  // Opened without the lock (calls to LOWER); two users racing for the
  // same directory each open it, and the first one inserted is kept.
  std::optional<Held> held = Open(root, dir);
  if (!held) return nullptr;
  std::lock_guard lk(mu_);
  if (auto it = fds_.find(dir); it != fds_.end()) return it->second.fd;
  ++opened_;
  if (order_.size() < max_) {
    order_.push_back(dir);
  } else {  // the bound: the oldest slot's directory makes room
    fds_.erase(order_[next_]);
    order_[next_] = dir;
    next_ = (next_ + 1) % max_;
  }
  return fds_.emplace(dir, std::move(*held)).first->second.fd;
}

void HeldDirs::Drop(const std::string& dir) {
  std::lock_guard lk(mu_);
  // Its slot in order_ stays, naming a directory no longer held: erasing it
  // again when the slot is reused is harmless (or drops a later copy early).
  for (std::string d = dir; !d.empty(); d = SplitRel(d).dir) fds_.erase(d);
}

std::optional<HeldDirs::DirAttrs> HeldDirs::Attrs(const std::string& dir) const {
  std::lock_guard lk(mu_);
  auto it = fds_.find(dir);
  if (it == fds_.end()) return std::nullopt;
  return it->second.attrs;
}

size_t HeldDirs::held() const {
  std::lock_guard lk(mu_);
  return fds_.size();
}

size_t HeldDirs::opened() const {
  std::lock_guard lk(mu_);
  return opened_;
}

DirAndName SplitRel(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  if (slash == std::string::npos) return {"", rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

}  // namespace epochfs::store
