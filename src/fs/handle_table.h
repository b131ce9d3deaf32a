// HandleTable: open file and directory handles (fi->fh) by number.
//
// The kernel may send RELEASE for a handle while a request on it is still
// being served (the reader was killed mid-request), so a handle's object must
// outlive the requests that use it: requests hold a shared_ptr taken from the
// table, RELEASE only removes the table's reference.
// Thread safety: thread-safe (sharded mutexes).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace epochfs::fs {

template <class T>
class HandleTable {
 public:
  // Stores `obj`; returns its handle number (never 0).
  uint64_t Add(std::shared_ptr<T> obj) {
    uint64_t h = next_.fetch_add(1, std::memory_order_relaxed);
    Shard& s = shards_[h % kShards];
    std::lock_guard lock(s.mu);
    s.map.emplace(h, std::move(obj));
    return h;
  }
  // The object of handle `h`, or nullptr after Remove.
  std::shared_ptr<T> Get(uint64_t h) const {
    const Shard& s = shards_[h % kShards];
    std::lock_guard lock(s.mu);
    auto it = s.map.find(h);
    return it == s.map.end() ? nullptr : it->second;
  }
  void Remove(uint64_t h) {
    std::shared_ptr<T> doomed;  // destroyed outside the lock
    Shard& s = shards_[h % kShards];
    std::lock_guard lock(s.mu);
    auto it = s.map.find(h);
    if (it == s.map.end()) return;
    doomed = std::move(it->second);
    s.map.erase(it);
  }

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<uint64_t, std::shared_ptr<T>> map;  // guarded by mu
  };
  std::atomic<uint64_t> next_{1};
  std::array<Shard, kShards> shards_;
};

}  // namespace epochfs::fs
