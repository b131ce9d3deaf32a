#include "kernel_cache.h"

namespace epochfs::fs {

void KernelCacheInvalidator::Start(fuse_session* se) {
  std::lock_guard lock(mu_);
  se_ = se;
  stop_ = false;
  worker_ = std::thread([this] { Loop(); });
}

void KernelCacheInvalidator::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  std::lock_guard lock(mu_);
  se_ = nullptr;
  queue_.clear();
}

void KernelCacheInvalidator::Remember(cache::ObjectId id, fuse_ino_t ino) {
  std::lock_guard lock(mu_);
  inode_of_[id] = ino;
}

void KernelCacheInvalidator::Dropped(cache::ObjectId id) {
  {
    std::lock_guard lock(mu_);
    auto it = inode_of_.find(id);
    if (it == inode_of_.end()) return;
    if (se_ != nullptr && !stop_) queue_.push_back(it->second);
    inode_of_.erase(it);
  }
  cv_.notify_one();
}

void KernelCacheInvalidator::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    fuse_ino_t ino = queue_.front();
    queue_.pop_front();
    fuse_session* se = se_;
    lock.unlock();
    // ENOENT: the kernel already forgot the inode, nothing is cached.
    fuse_lowlevel_notify_inval_inode(se, ino, 0, 0);
    lock.lock();
  }
}

}  // namespace epochfs::fs
