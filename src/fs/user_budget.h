// UserBudget: per-user bounds on files held open through the mount and the
// bytes the daemon buffers for them.
//
// Two instances: control files open for writing (a control write is buffered
// in the daemon until close, as the control plane takes whole files), and
// spill files (each holds a descriptor on the SSD). Without bounds, one user
// holding many descriptors would make the daemon hold any amount of memory or
// run out of descriptors for everyone. Each uid other than root may hold at
// most `max_files` files open and `max_bytes` buffered in them together
// (limits.* in the config). The spill and dataset instances also draw on the
// mount's DescriptorPool, so that all users together leave the daemon a
// reserve of descriptors.
// Thread safety: all members are thread-safe.
#pragma once

#include <sys/types.h>

#include <cerrno>

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "descriptor_pool.h"

namespace epochfs::fs {

class UserBudget {
 public:
  // `pool`: when not null, every file (root's too) also holds one of the
  // pool's descriptors while open.
  UserBudget(uint32_t max_files, uint64_t max_bytes = UINT64_MAX,
             DescriptorPool* pool = nullptr)
      : max_files_(max_files), max_bytes_(max_bytes), pool_(pool) {}

  // One more file open by `uid`: 0, EMFILE past max_files, or ENFILE when
  // the pool is empty.
  int Open(uid_t uid) {
    if (pool_ != nullptr && !pool_->Take()) return ENFILE;
    if (uid == 0) return 0;
    std::lock_guard lock(mu_);
    Usage& u = use_[uid];
    if (u.files >= max_files_) {
      if (u.files == 0 && u.bytes == 0) use_.erase(uid);
      if (pool_ != nullptr) pool_->Give();
      return EMFILE;
    }
    ++u.files;
    return 0;
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
  // A file of `uid` (opened with Open() == 0) closed with `bytes` buffered.
  void Close(uid_t uid, uint64_t bytes) {
    if (pool_ != nullptr) pool_->Give();
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
  DescriptorPool* const pool_;
  std::mutex mu_;
  std::unordered_map<uid_t, Usage> use_;
};

}  // namespace epochfs::fs
