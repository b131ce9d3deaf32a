// PrefetchDepth: how far ahead a policy may load, pulled down by waste.
//
// Part of a policy that prefetches (the "future" policy, Prefetching). It
// follows every object the policy admitted ahead of its read until that
// read (a prefetch that paid) or until the object leaves the cache unread
// (waste: its bytes were read from LOWER for nothing, the daemon's
// `prefetch_wasted`). The depth is how many such objects, held unread or
// in flight, there may be at once: it halves at each waste and grows by one
// at each prefetch read (additive increase, multiplicative decrease), so
// that a waste rate w settles it near the depth at which one prefetch in
// 1/w is lost, and a run where every prefetch is read keeps it at kMax.
//
// Pure: events in, a number out. Thread safety: not thread-safe; the policy
// serialises every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_set>

#include "epochfs/cache/policy.h"

namespace epochfs::cache {

class PrefetchDepth {
 public:
  static constexpr uint32_t kMax = 1024;

  // Objects loaded ahead that may be unread at once (held or in flight).
  uint32_t depth() const { return depth_; }
  // Of those, held now and not read yet.
  size_t unread() const { return unread_.size(); }
  uint64_t read() const { return read_; }
  uint64_t wasted() const { return wasted_; }
  bool Unread(ObjectId id) const { return unread_.count(id) != 0; }
  // How many more may be loaded ahead now, `loading` being in flight.
  size_t Room(size_t loading) const;

  // `id` was loaded ahead of its read and admitted.
  void Admitted(ObjectId id) { unread_.insert(id); }
  // `id` was read (a hit, or a miss of bytes the store lost): a prefetch
  // that paid when it was unread. Returns whether it was.
  bool Read(ObjectId id);
  // `id` left the cache (evicted, dropped): waste when it was unread.
  bool Left(ObjectId id);

 private:
  std::unordered_set<ObjectId> unread_;
  uint32_t depth_ = kMax;
  uint64_t read_ = 0, wasted_ = 0;
};

}  // namespace epochfs::cache
