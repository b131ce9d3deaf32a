// RamStore: the RAM tier. A map ObjectId → ObjectRef with a hard byte budget.
//
// The policy decides what should be resident; the store enforces the budget
// regardless (Insert refuses what does not fit), so `used() <= budget()` holds
// at every instant, even if a policy has a bug.
// Thread safety: all methods are thread-safe (sharded mutexes, atomic counters).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "epochfs/store/object.h"

namespace epochfs::store {

class RamStore {
 public:
  explicit RamStore(uint64_t budget_bytes) : budget_(budget_bytes) {}
  RamStore(const RamStore&) = delete;
  RamStore& operator=(const RamStore&) = delete;

  // The resident object, or nullptr.
  ObjectRef Find(cache::ObjectId id) const;
  // Inserts `obj`. Returns false (and stores nothing) when it is already
  // present or does not fit in the remaining budget.
  bool Insert(ObjectRef obj);
  // Drops `id`; returns true when it was resident.
  bool Erase(cache::ObjectId id);
  // Puts `with` in the place of `expected` (the same pointer) when that is
  // still the entry; `with` must be of the same id and charge the same
  // bytes (a handed-over stub for the object or the reverse). Returns false
  // and changes nothing otherwise.
  bool Replace(const ObjectRef& expected, ObjectRef with);

  // Changes the budget (memory governor). Nothing is evicted here: the caller
  // erases what the policy chose; until then used() may exceed budget() and
  // every Insert is refused.
  void SetBudget(uint64_t bytes) { budget_.store(bytes, std::memory_order_relaxed); }
  uint64_t budget() const { return budget_.load(std::memory_order_relaxed); }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t objects() const { return objects_.load(std::memory_order_relaxed); }
  // Of used(), the bytes of handed-over objects (held by the kernel), and
  // how many they are.
  uint64_t handed_bytes() const { return handed_bytes_.load(std::memory_order_relaxed); }
  uint64_t handed_objects() const { return handed_objects_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<cache::ObjectId, ObjectRef> map;  // guarded by mu
  };
  Shard& ShardFor(cache::ObjectId id) const { return shards_[id % kShards]; }

  std::atomic<uint64_t> budget_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> objects_{0};
  std::atomic<uint64_t> handed_bytes_{0};
  std::atomic<uint64_t> handed_objects_{0};
  void Count(const Object& o, bool add);  // the handed-over gauges
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace epochfs::store
