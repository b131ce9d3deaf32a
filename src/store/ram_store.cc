#include "epochfs/store/ram_store.h"

namespace epochfs::store {

ObjectRef RamStore::Find(cache::ObjectId id) const {
  Shard& s = ShardFor(id);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(id);
  return it == s.map.end() ? nullptr : it->second;
}

void RamStore::Count(const Object& o, bool add) {
  if (!o.handed_over) return;
  if (add) {
    handed_bytes_.fetch_add(o.handed_size, std::memory_order_relaxed);
    handed_objects_.fetch_add(1, std::memory_order_relaxed);
  } else {
    handed_bytes_.fetch_sub(o.handed_size, std::memory_order_relaxed);
    handed_objects_.fetch_sub(1, std::memory_order_relaxed);
  }
}

bool RamStore::Insert(ObjectRef obj) {
  const uint64_t size = obj->charged();
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
  Count(*it->second, true);
  return true;
}

bool RamStore::Erase(cache::ObjectId id) {
  Shard& s = ShardFor(id);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(id);
  if (it == s.map.end()) return false;
  used_.fetch_sub(it->second->charged(), std::memory_order_relaxed);
  objects_.fetch_sub(1, std::memory_order_relaxed);
  Count(*it->second, false);
  s.map.erase(it);
  return true;
}

bool RamStore::Replace(const ObjectRef& expected, ObjectRef with) {
  if (!expected || !with || with->id != expected->id || with->charged() != expected->charged()) {
    return false;
  }
  Shard& s = ShardFor(expected->id);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(expected->id);
  if (it == s.map.end() || it->second != expected) return false;
  Count(*it->second, false);
  Count(*with, true);
  it->second = std::move(with);
  return true;
}

}  // namespace epochfs::store
