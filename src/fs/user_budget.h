// UserBudget: per-user bounds on files held open through the mount and the
// bytes the daemon buffers for them.
//
// Two instances: control files open for writing (a control write is buffered
// in the daemon until close, as the control plane takes whole files), and
// spill files (each holds a descriptor on the SSD). Without bounds, one user
// holding many descriptors would make the daemon hold any amount of memory or
// run out of descriptors for everyone. Each uid other than root may hold at
// most `max_files` files open and `max_bytes` buffered in them together
// (limits.* in the config).
// Thread safety: all members are thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace epochfs::fs {

class UserBudget {
 public:
  UserBudget(uint32_t max_files, uint64_t max_bytes = UINT64_MAX)
      : max_files_(max_files), max_bytes_(max_bytes) {}

  // One more file open for writing by `uid`; false (EMFILE) past max_files.
  bool Open(uid_t uid) {
    if (uid == 0) return true;
    std::lock_guard lock(mu_);
    Usage& u = use_[uid];
    if (u.files >= max_files_) {
      if (u.files == 0 && u.bytes == 0) use_.erase(uid);
      return false;
    }
    ++u.files;
    return true;
  }
  // `bytes` more buffered by `uid`; false (EDQUOT) past max_bytes.
  bool Grow(uid_t uid, uint64_t bytes) {
    if (uid == 0 || bytes == 0) return true;
    std::lock_guard lock(mu_);
    Usage& u = use_[uid];
    if (bytes > max_bytes_ - u.bytes) return false;  // u.bytes <= max_bytes_ always
    u.bytes += bytes;
    return true;
  }
  // A file of `uid` closed with `bytes` buffered.
  void Close(uid_t uid, uint64_t bytes) {
    if (uid == 0) return;
    std::lock_guard lock(mu_);
    auto it = use_.find(uid);
    if (it == use_.end()) return;
    it->second.files -= it->second.files > 0 ? 1 : 0;
    it->second.bytes -= bytes <= it->second.bytes ? bytes : it->second.bytes;
    if (it->second.files == 0 && it->second.bytes == 0) use_.erase(it);
  }

 private:
  struct Usage {
    uint32_t files = 0;
    uint64_t bytes = 0;
  };
  const uint32_t max_files_;
  const uint64_t max_bytes_;
  std::mutex mu_;
  std::unordered_map<uid_t, Usage> use_;
};

}  // namespace epochfs::fs
