#include "epochfs/cache/slot_index.h"

#include <bit>

namespace epochfs::cache {

size_t SlotIndex::Home(ObjectId object) const {
  // A multiplicative mix (the 64-bit golden ratio); the top bits pick the cell.
  const uint64_t h = (object ^ (object >> 29)) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h >> (64 - std::countr_zero(cells_.size())));
}

uint32_t SlotIndex::Find(ObjectId object) const {
  if (cells_.empty()) return kNone;
  const size_t mask = cells_.size() - 1;
  for (size_t i = Home(object);; i = (i + 1) & mask) {
    const Cell& c = cells_[i];
    if (c.slot == kNone) return kNone;
    if (c.object == object) return c.slot;
  }
}

std::pair<uint32_t, bool> SlotIndex::Insert(ObjectId object, uint32_t next) {
  if ((size_ + 1) * 4 > cells_.size() * 3) Grow(cells_.empty() ? 16 : cells_.size() * 2);
  const size_t mask = cells_.size() - 1;
  for (size_t i = Home(object);; i = (i + 1) & mask) {
    Cell& c = cells_[i];
    if (c.slot == kNone) {
      c = {object, next};
      ++size_;
      return {next, true};
    }
    if (c.object == object) return {c.slot, false};
  }
}

void SlotIndex::Reserve(size_t n) {
  size_t capacity = cells_.empty() ? 16 : cells_.size();
  while (n * 4 > capacity * 3) capacity *= 2;
  if (capacity > cells_.size()) Grow(capacity);
}

void SlotIndex::Grow(size_t capacity) {
  std::vector<Cell> old = std::move(cells_);
  cells_.assign(capacity, Cell{});
  const size_t mask = capacity - 1;
  for (const Cell& c : old) {
    if (c.slot == kNone) continue;
    size_t i = Home(c.object);
    while (cells_[i].slot != kNone) i = (i + 1) & mask;
    cells_[i] = c;
  }
}

}  // namespace epochfs::cache
