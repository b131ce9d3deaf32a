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

void KernelCacheInvalidator::Remember(cache::ObjectId id, fuse_ino_t ino, uint64_t off,
                                      uint64_t len) {
  std::lock_guard lock(mu_);
  pages_of_[id] = Pages{ino, off, len};
}

fuse_ino_t KernelCacheInvalidator::Dropped(cache::ObjectId id) {
  fuse_ino_t ino = 0;
  {
    std::lock_guard lock(mu_);
    auto it = pages_of_.find(id);
    if (it == pages_of_.end()) return 0;
    ino = it->second.ino;
    if (se_ != nullptr && !stop_) queue_.push_back(it->second);
    pages_of_.erase(it);
  }
  cv_.notify_one();
  return ino;
}

void KernelCacheInvalidator::Drop(fuse_ino_t ino, uint64_t off, uint64_t len) {
  {
    std::lock_guard lock(mu_);
    if (se_ == nullptr || stop_) return;
    queue_.push_back(Pages{ino, off, len});
  }
  cv_.notify_one();
}

void KernelCacheInvalidator::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const Pages p = queue_.front();
    queue_.pop_front();
    fuse_session* se = se_;
    lock.unlock();
    // ENOENT: the kernel already forgot the inode, nothing is cached.
    fuse_lowlevel_notify_inval_inode(se, p.ino, static_cast<off_t>(p.off),
                                     static_cast<off_t>(p.len));
    lock.lock();
  }
}

}  // namespace epochfs::fs
