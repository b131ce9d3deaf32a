#include "epochfs/store/held_dirs.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace epochfs::store {

std::shared_ptr<const UniqueFd> HeldDirs::Get(int root, const std::string& dir) {
  {
    std::lock_guard lk(mu_);
    if (auto it = fds_.find(dir); it != fds_.end()) return it->second;
  }
  if (max_ == 0) return nullptr;
  // Opened without the lock (a call to LOWER); two users racing for the
  // same directory each open it, and the first one inserted is kept.
  struct open_how how {};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const long fd = ::syscall(SYS_openat2, root, dir.c_str(), &how, sizeof(how));
  if (fd < 0) return nullptr;
  auto held = std::make_shared<const UniqueFd>(static_cast<int>(fd));
  std::lock_guard lk(mu_);
  if (auto it = fds_.find(dir); it != fds_.end()) return it->second;
  ++opened_;
  if (order_.size() < max_) {
    order_.push_back(dir);
  } else {  // the bound: the oldest slot's directory makes room
    fds_.erase(order_[next_]);
    order_[next_] = dir;
    next_ = (next_ + 1) % max_;
  }
  fds_.emplace(dir, held);
  return held;
}

void HeldDirs::Drop(const std::string& dir) {
  std::lock_guard lk(mu_);
  // Its slot in order_ stays, naming a directory no longer held: erasing it
  // again when the slot is reused is harmless (or drops a later copy early).
  fds_.erase(dir);
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
