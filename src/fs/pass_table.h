// PassTable: the reads of dataset files in a session without OPEN
// (fuse.no_open; fs_types.h, Role::kDataset).
//
// There the kernel opens files by itself and sends a READ, by inode and with
// no handle, only for pages it does not hold. A pass is what an open would
// have held for those READs: the file's object, its block state or its LOWER
// descriptor (OpenFile). A pass is one read of the file from its start (to the
// policy, an open: one attributed access): the kernel's READs of it, at offset
// 0 and at the read-ahead windows after it (which may arrive first), join it
// instead of asking the cache again; the next READ at offset 0 after one was
// served begins a new pass. A pass is of one node: an inode number the kernel
// forgot may be given to another file, or to the next version of the same
// one (InodeTable), with the next generation; a READ joins only a pass of
// its node's generation, so it never reads what the number held before.
//
// Bounded: at most `max_passes` passes, and at most `max_held` bytes of
// objects that are not in the RAM tier (held only by their pass); the oldest
// pass goes first. A READ that finds no pass starts one (an extra access; at
// worst a second read from LOWER), so the bounds cost speed, never bytes.
// The kernel's pages of such an object stay while its pass does (dropping
// them at once would race with the reader still copying them, whose next
// READ would count as a second read of the file): `on_end` is called with the
// inode of a pass that held a whole object when the bounds push it out.
// Internal to src/fs. Thread safety: thread-safe.
#pragma once

#include <fuse_lowlevel.h>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "open_file.h"

namespace epochfs::fs {

class PassTable {
 public:
  PassTable(size_t max_passes, uint64_t max_held, std::function<void(fuse_ino_t)> on_end = {})
      : max_passes_(max_passes), max_held_(max_held), on_end_(std::move(on_end)) {}

  // The pass a READ of `ino` (of node generation `generation`) at `off`
  // joins: the inode's pass, unless it is of another generation, or `off`
  // is 0 and that pass already served offset 0 (a new read of the file);
  // nullptr then, or when there is none.
  std::shared_ptr<OpenFile> Join(fuse_ino_t ino, uint64_t generation, uint64_t off) {
    std::lock_guard lock(mu_);
    auto it = by_ino_.find(ino);
    if (it == by_ino_.end()) return nullptr;
    Pass& p = *it->second;
    if (p.generation != generation) return nullptr;
    if (off == 0) {
      if (p.started) return nullptr;
      p.started = true;
    }
    return p.file;
  }

  // Makes `file` the pass over `ino` of node generation `generation`
  // (replacing any), begun by a READ at `off`. `held`: the bytes that only
  // this pass keeps in memory (0 for an object the RAM tier holds).
  // Returns false when the pass is not kept (`held` > max_held).
  bool Put(fuse_ino_t ino, uint64_t generation, std::shared_ptr<OpenFile> file, uint64_t held,
           uint64_t off) {
    std::vector<std::shared_ptr<OpenFile>> gone;  // released outside the lock
    std::vector<fuse_ino_t> ended;
    {
      std::lock_guard lock(mu_);
      if (auto it = by_ino_.find(ino); it != by_ino_.end()) Erase(it->second, gone);
      if (held > max_held_) return false;  // too large to hold outside the budget
      order_.push_back({ino, generation, std::move(file), held, off == 0});
      by_ino_[ino] = std::prev(order_.end());
      held_ += held;
      while (order_.size() > max_passes_ || held_ > max_held_) {
        const Pass& old = order_.front();
        if (old.held != 0 && old.file->kind == OpenFile::Kind::kObject) ended.push_back(old.ino);
        Erase(order_.begin(), gone);
      }
    }
    if (on_end_) {
      for (fuse_ino_t e : ended) on_end_(e);
    }
    return true;
  }

  // Ends the pass over `ino` if it holds a whole object (which just left the
  // RAM tier: the pass must not keep its bytes). A pass over blocks stays: its
  // bytes are counted in max_held, and releasing it may wait for its
  // read-ahead, which the caller (under the cache's lock) must not.
  void ForgetObject(fuse_ino_t ino) {
    std::vector<std::shared_ptr<OpenFile>> gone;  // released outside the lock
    std::lock_guard lock(mu_);
    auto it = by_ino_.find(ino);
    if (it != by_ino_.end() && it->second->file->kind == OpenFile::Kind::kObject) {
      Erase(it->second, gone);
    }
  }

  // Ends the pass over `ino` if it is `file`'s: its object went to the
  // kernel whole (CacheFront::HandOver), so no READ of this pass will come,
  // and the pass must not keep the bytes the store let go of.
  void End(fuse_ino_t ino, const std::shared_ptr<OpenFile>& file) {
    std::vector<std::shared_ptr<OpenFile>> gone;  // released outside the lock
    std::lock_guard lock(mu_);
    auto it = by_ino_.find(ino);
    if (it != by_ino_.end() && it->second->file == file) Erase(it->second, gone);
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return order_.size();
  }

 private:
  struct Pass {
    fuse_ino_t ino;
    uint64_t generation;
    std::shared_ptr<OpenFile> file;
    uint64_t held;
    bool started;  // offset 0 served
  };
  using Iter = std::list<Pass>::iterator;
  void Erase(Iter it, std::vector<std::shared_ptr<OpenFile>>& gone) {
    held_ -= it->held;
    gone.push_back(std::move(it->file));
    by_ino_.erase(it->ino);
    order_.erase(it);
  }

  const size_t max_passes_;
  const uint64_t max_held_;
  const std::function<void(fuse_ino_t)> on_end_;
  mutable std::mutex mu_;
  std::list<Pass> order_;                     // guarded by mu_; oldest first
  std::unordered_map<fuse_ino_t, Iter> by_ino_;  // guarded by mu_
  uint64_t held_ = 0;                         // guarded by mu_
};

}  // namespace epochfs::fs
