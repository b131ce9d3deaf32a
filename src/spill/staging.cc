#include "staging.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "chunk_format.h"

namespace epochfs::spill {

Result<std::unique_ptr<Staging>> Staging::Create(uint32_t chunk_bytes, size_t buf_bytes,
                                                 uint32_t capacity, uint32_t scratch) {
  (void)chunk_bytes;
  std::unique_ptr<Staging> s(new Staging());
  const size_t total = size_t{capacity} + scratch;
  s->buf_bytes_ = buf_bytes;
  s->map_bytes_ = total * buf_bytes;
  void* p = ::mmap(nullptr, s->map_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return ErrnoStatus(Code::kIoError, errno,
                       "spill staging: mmap of " + std::to_string(s->map_bytes_) + " bytes");
  }
  s->base_ = static_cast<uint8_t*>(p);
  s->capacity_ = capacity;
  s->entries_.resize(capacity);
  s->free_entries_.reserve(capacity);
  for (uint32_t i = capacity; i-- > 0;) {
    s->entries_[i].buf = i;
    s->free_entries_.push_back(&s->entries_[i]);
  }
  for (uint32_t i = 0; i < scratch; ++i) s->free_scratch_.push_back(capacity + i);
  return s;
}

Staging::~Staging() {
  if (base_) ::munmap(base_, map_bytes_);
}

std::vector<iovec> Staging::Iovecs() const {
  std::vector<iovec> v(map_bytes_ / buf_bytes_);
  for (size_t i = 0; i < v.size(); ++i) v[i] = iovec{buffer(static_cast<uint32_t>(i)), buf_bytes_};
  return v;
}

Entry* Staging::Allocate(void* owner, uint64_t chunk) {
  if (free_entries_.empty()) return nullptr;
  Entry* e = free_entries_.back();
  free_entries_.pop_back();
  e->owner = owner;
  e->chunk = chunk;
  e->pins = 0;
  e->error = Status::Ok();
  e->wb_failed = false;
  e->unverified = false;
  ForgetKept(e);
  e->state = Entry::State::kClean;  // the caller sets the real state
  ++used_;
  PushBack(e);
  return e;
}

void Staging::Release(Entry* e) {
  SetState(e, Entry::State::kFree);
  Unlink(e);
  e->owner = nullptr;
  e->error = Status::Ok();
  --used_;
  free_entries_.push_back(e);
}

Entry* Staging::EvictionCandidate() const {
  for (Entry* e = lru_head_; e; e = e->next) {
    // A failed load nobody came for is dropped too (the next read retries).
    if (e->pins == 0 && (e->state == Entry::State::kClean || e->state == Entry::State::kFailed)) {
      return e;
    }
  }
  return nullptr;
}

void Staging::Touch(Entry* e) {
  if (e == lru_tail_) return;
  Unlink(e);
  PushBack(e);
}

int Staging::TakeScratch() {
  if (free_scratch_.empty()) return -1;
  uint32_t i = free_scratch_.back();
  free_scratch_.pop_back();
  return static_cast<int>(i);
}

void Staging::SetState(Entry* e, Entry::State s) {
  auto is_dirty = [](Entry::State st) {
    return st == Entry::State::kDirty || st == Entry::State::kWriting;
  };
  if (is_dirty(e->state)) --dirty_;
  if (is_dirty(s)) ++dirty_;
  e->state = s;
}

void Staging::Unlink(Entry* e) {
  if (e->prev) e->prev->next = e->next; else lru_head_ = e->next;
  if (e->next) e->next->prev = e->prev; else lru_tail_ = e->prev;
  e->prev = e->next = nullptr;
}

void Staging::PushBack(Entry* e) {
  e->prev = lru_tail_;
  e->next = nullptr;
  if (lru_tail_) lru_tail_->next = e; else lru_head_ = e;
  lru_tail_ = e;
}

namespace {

// Extends or restarts e's kept checksum with the bytes just copied to
// [lo, hi) (read from the writer's buffer, which the copy left in the cache).
void KeepSum(Entry* e, uint32_t lo, uint32_t hi, std::span<const uint8_t> in) {
  if (!e->sum_ok) return;
  if (lo == 0 && hi >= e->summed) {
    e->sum.Reset();
  } else if (lo != e->summed) {
    e->sum_ok = false;
    return;
  }
  e->sum.Update(in.data(), in.size());
  e->summed = hi;
}

}  // namespace

void CopyIntoChunk(Entry* e, uint8_t* data, uint32_t chunk_bytes, uint32_t lo,
                   std::span<const uint8_t> in) {
  const uint32_t hi = lo + static_cast<uint32_t>(in.size());
  if (lo == 0 && hi == chunk_bytes) CountsZeroed(e);  // every byte is the write's
  const bool append = lo >= e->counted && e->counted % 4 == 0;
  const bool replace = lo == 0 && hi >= e->counted;
  if (!e->counts_ok || lo % 4 != 0 || !(append || replace)) {
    e->counts_ok = false;
    std::memcpy(data + lo, in.data(), in.size());
    KeepSum(e, lo, hi, in);
    return;
  }
  const ZvcCounts c = ZvcCopyCount({data + lo, in.size()}, in);
  if (append) {
    e->counts.nz32 += c.nz32;
    e->counts.nz16 += c.nz16;
  } else {
    e->counts = c;
  }
  e->counted = hi;
  // A chunk whose bytes so far would be stored compressed gets its checksum
  // over the encoded bytes at write-back: the kept one would be wasted.
  if (StoredCompressed(ZvcChoose(hi, e->counts), hi)) e->sum_ok = false;
  KeepSum(e, lo, hi, in);
}

bool SumFor(const Entry& e, uint32_t logical, uint64_t* out) {
  if (!e.sum_ok || e.summed != logical) return false;
  *out = e.sum.Digest();
  return true;
}

bool CountsFor(const Entry& e, uint32_t logical, ZvcCounts* out) {
  // Past `counted` the bytes are zeros; a run that stops inside a word counts
  // that word only if it is the last one.
  if (!e.counts_ok || e.counted > logical || (e.counted % 4 != 0 && e.counted != logical)) {
    return false;
  }
  *out = e.counts;
  return true;
}

}  // namespace epochfs::spill
