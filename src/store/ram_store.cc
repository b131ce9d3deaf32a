#include "epochfs/store/ram_store.h"

namespace epochfs::store {

ObjectRef RamStore::Find(cache::ObjectId id) const {
  Shard& s = ShardFor(id);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(id);
  return it == s.map.end() ? nullptr : it->second;
}

bool RamStore::Insert(ObjectRef obj) {
  const uint64_t size = obj->data.size();
  // Reserve the bytes first so that concurrent inserts never overshoot.
  const uint64_t budget = budget_.load(std::memory_order_relaxed);
  uint64_t cur = used_.load(std::memory_order_relaxed);
  do {
    if (size > budget || cur > budget - size) return false;
  } while (!used_.compare_exchange_weak(cur, cur + size, std::memory_order_relaxed));

  Shard& s = ShardFor(obj->id);
  std::lock_guard lock(s.mu);
  auto [it, inserted] = s.map.emplace(obj->id, std::move(obj));
  if (!inserted) {
    used_.fetch_sub(size, std::memory_order_relaxed);
    return false;
  }
  objects_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool RamStore::Erase(cache::ObjectId id) {
  Shard& s = ShardFor(id);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(id);
  if (it == s.map.end()) return false;
  used_.fetch_sub(it->second->data.size(), std::memory_order_relaxed);
  objects_.fetch_sub(1, std::memory_order_relaxed);
  s.map.erase(it);
  return true;
}

}  // namespace epochfs::store
