// ReadSlots: which readers' loads from LOWER start now, and which wait
// (lower.read_slots).
//
// On a store whose bandwidth binds (a disk, NFS, a throttled device), loads
// in flight share it: every job's miss slows every other's, and while all
// jobs crawl the cache holds a little of each one's data. Letting the job
// nearest its end (the smallest key: the policy's Policy::BytesLeft) read at
// the store's full speed while the others fill its gaps lets the cache hold
// that job's data; the jobs end one after another, all sooner
// (docs/future_policy.md, "Which miss goes first").
//
// The rule, for a load with key k:
//   - k no larger than any other load's, waiting, in flight, or ended within
//     `anticipate`: it starts at once, with no bound. So loads of equal keys
//     (unregistered readers, policies without an order: all 0) are never
//     held back. Keys are compared whatever the job: a job whose key rose
//     since its loads in flight began waits behind them (the caller's keys
//     should not rise; docs/future_policy.md, "Status");
//   - otherwise it waits until fewer than `slots` loads are in flight, it is
//     first in line (smallest key, then the earliest asked), and no load with
//     a smaller key ended within `anticipate`.
// Anticipation: a loader reads its batch's files one after another, and
// between two of them (a close, an open) the first job has no load in flight
// for a moment; without it another job's larger load would start in every
// such gap and the first job's next load queue behind it in the store.
// Bounds: at most `max_waiting` loads wait (each holds a FUSE thread); past
// it a load starts at once. No load waits longer than `max_wait`: then it
// starts whatever its key (a job that declares less than it reads cannot
// starve the others). A waiting load gives up when the caller's FUSE request
// is interrupted (CancelScope, polled every 50 ms: Interrupted).
// slots = 0: no bound, Acquire returns at once.
// Thread safety: thread-safe. REQUIRES at destruction: no Slot alive.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <utility>

#include "epochfs/common/status.h"

namespace epochfs::store {

struct ReadSlotsOptions {
  uint32_t slots = 0;  // lower.read_slots; 0: no bound
  // Loads waiting at once, at most (each holds a FUSE thread): past it a
  // load starts at once. The daemon: fuse threads - 2.
  uint32_t max_waiting = UINT32_MAX;
  // The longest a load waits: then it starts whatever its key (aging).
  std::chrono::milliseconds max_wait{1000};
  // How long a load that ended keeps its key in line (anticipation).
  std::chrono::microseconds anticipate{3000};
};

struct ReadSlotsCounters {
  uint64_t waits = 0;      // loads that waited for a slot
  uint64_t wait_ns = 0;    // their time waiting, in total
  uint64_t overflows = 0;  // loads started at once because max_waiting waited
  uint64_t aged = 0;       // loads started after waiting max_wait
  uint64_t waiting = 0;    // loads waiting now
  uint64_t held = 0;       // loads in flight now (with a slot)
};

class ReadSlots {
 public:
  explicit ReadSlots(const ReadSlotsOptions& options);
  ReadSlots(const ReadSlots&) = delete;
  ReadSlots& operator=(const ReadSlots&) = delete;

  // A held slot (or none, when there is no bound); released when destroyed.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), key_(o.key_) {}
    Slot& operator=(Slot&& o) noexcept;
    ~Slot();

   private:
    friend class ReadSlots;
    Slot(ReadSlots* owner, uint64_t key) : owner_(owner), key_(key) {}
    ReadSlots* owner_ = nullptr;
    uint64_t key_ = 0;
  };

  // Waits for a slot as described above; OK with *out holding it (none when
  // slots = 0), or Interrupted with nothing held. `interrupted`: the
  // caller's CancelScope predicate, or null.
  Status Acquire(uint64_t key, const std::function<bool()>* interrupted, Slot* out);

  uint32_t slots() const { return slots_; }
  ReadSlotsCounters counters() const;

 private:
  void Release(uint64_t key);
  using Clock = std::chrono::steady_clock;
  // REQUIRES: mu_ held; `me` in waiting_. Sets *retry to when the answer
  // may change without a wake-up (an anticipation window ends).
  bool MayStart(const std::pair<uint64_t, uint64_t>& me, Clock::time_point now,
                Clock::time_point* retry);

  const uint32_t slots_;
  const uint32_t max_waiting_;
  const std::chrono::milliseconds max_wait_;
  const std::chrono::microseconds anticipate_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint32_t held_ = 0;
  std::multiset<uint64_t> held_keys_;  // the keys of the loads in flight
  // Loads that ended within the last `anticipate_`: (when, key), oldest first.
  std::deque<std::pair<Clock::time_point, uint64_t>> recent_;
  uint64_t next_ticket_ = 0;
  std::set<std::pair<uint64_t, uint64_t>> waiting_;  // (key, ticket): the first starts next
  uint64_t waits_ = 0, wait_ns_ = 0, overflows_ = 0, aged_ = 0;
};

}  // namespace epochfs::store
