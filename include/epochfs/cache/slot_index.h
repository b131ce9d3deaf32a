// SlotIndex: object → dense slot number, for policies that keep per-object
// state in vectors indexed by slot.
//
// Grow-only (slots are never removed) and flat: one array of (object, slot)
// pairs probed linearly, at most 3/4 full. It replaces a node-based hash map
// whose allocation per object and pointer chase per probe were a fifth of the
// time of registering a million samples. Objects are already hashes
// (store::ObjectIdOf); they are mixed once more so that ids chosen by a test
// or a hostile path spread as well.
// Thread safety: none; the owner serialises calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "epochfs/cache/policy.h"

namespace epochfs::cache {

class SlotIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // The slot of `object`, or kNone.
  uint32_t Find(ObjectId object) const;
  // The slot of `object`; when it has none, gives it `next` and returns
  // {next, true}. `next` must not be kNone.
  std::pair<uint32_t, bool> Insert(ObjectId object, uint32_t next);
  // Room for `n` objects in all without growing.
  void Reserve(size_t n);
  size_t size() const { return size_; }

 private:
  struct Cell {
    ObjectId object = 0;
    uint32_t slot = kNone;  // kNone: empty
  };
  size_t Home(ObjectId object) const;
  void Grow(size_t capacity);

  std::vector<Cell> cells_;  // size a power of two, or 0
  size_t size_ = 0;
};

}  // namespace epochfs::cache
