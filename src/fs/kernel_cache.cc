#include "kernel_cache.h"

#include <utility>

namespace epochfs::fs {

void KernelCacheInvalidator::Start(fuse_session* se, Held held) {
  Start(
      [se](fuse_ino_t ino, uint64_t off, uint64_t len) {
        // ENOENT: the kernel already forgot the inode, nothing is cached.
        fuse_lowlevel_notify_inval_inode(se, ino, static_cast<off_t>(off), static_cast<off_t>(len));
      },
      std::move(held));
}

void KernelCacheInvalidator::Start(Invalidate invalidate, Held held) {
  std::lock_guard lock(mu_);
  invalidate_ = std::move(invalidate);
  held_ = std::move(held);
  started_ = true;
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
  started_ = false;
  queue_.clear();
  busy_ = false;
  idle_cv_.notify_all();
}

void KernelCacheInvalidator::Remember(cache::ObjectId id, fuse_ino_t ino, const store::Version& v,
                                      uint64_t off, uint64_t len) {
  std::lock_guard lock(mu_);
  pages_of_[id] = Remembered{Pages{ino, off, len}, v, next_gen_++};
}

fuse_ino_t KernelCacheInvalidator::Dropped(cache::ObjectId id) {
  fuse_ino_t ino = 0;
  {
    std::lock_guard lock(mu_);
    auto it = pages_of_.find(id);
    if (it == pages_of_.end()) return 0;
    ino = it->second.pages.ino;
    if (started_ && !stop_) {
      queue_.push_back(Queued{it->second.pages, true, id, it->second.version, next_gen_});
    }
    pages_of_.erase(it);
  }
  cv_.notify_one();
  return ino;
}

void KernelCacheInvalidator::Drop(fuse_ino_t ino, uint64_t off, uint64_t len) {
  {
    std::lock_guard lock(mu_);
    if (!started_ || stop_) return;
    Queued q;
    q.pages = Pages{ino, off, len};
    queue_.push_back(q);
  }
  cv_.notify_one();
}

void KernelCacheInvalidator::WaitIdle() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return !started_ || stop_ || (queue_.empty() && !busy_); });
}

uint64_t KernelCacheInvalidator::skipped() const {
  std::lock_guard lock(mu_);
  return skipped_;
}

// Remembered again since the eviction, with the same pages and version: the
// kernel's pages are again a copy of what the RAM tier holds (if it does:
// Held, asked by the caller).
bool KernelCacheInvalidator::RememberedSince(const Queued& q) const {
  if (!q.of_object) return false;
  auto it = pages_of_.find(q.id);
  return it != pages_of_.end() && it->second.gen >= q.gen && it->second.pages == q.pages &&
         it->second.version == q.version;
}

void KernelCacheInvalidator::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const Queued q = queue_.front();
    queue_.pop_front();
    busy_ = true;
    const bool again = RememberedSince(q);
    lock.unlock();
    // Held outside mu_: the RAM tier calls Dropped under its own lock.
    if (!(again && held_(q.id, q.version))) {
      invalidate_(q.pages.ino, q.pages.off, q.pages.len);
      lock.lock();
    } else {
      lock.lock();
      ++skipped_;
    }
  }
}

}  // namespace epochfs::fs
