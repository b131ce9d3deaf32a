// ReadSlots: which readers' loads from LOWER start now, and which wait
// (lower.read_slots).
//
// On a store whose bandwidth binds (a disk, NFS, a throttled device), loads
// in flight share it: every job's miss slows every other's, and while all
// jobs crawl the cache holds a little of each one's data. Letting the job
// nearest its end (the smallest key: the policy's ReadOrder::BytesLeft) read at
// the store's full speed while the others fill its gaps lets the cache hold
// that job's data; the jobs end one after another, all sooner
// (docs/future_policy.md, "Which miss goes first").
//
// The rule, for a load with key k:
//   - k no larger than the key of any other job's load, waiting, in flight,
//     or ended within `anticipate`: it starts at once, with no bound. A load
//     is never compared with its own job's loads nor with those of the jobs
//     it shares objects with (ReadTurn::with): their keys were taken when
//     they asked and may be lower than its own now (a job's key rises with
//     its mean read size), and a load of one serves the other. So one job
//     alone is never held back, nor are loads of equal keys (unregistered
//     readers, policies without an order: all 0);
//   - otherwise it waits until fewer than `slots` loads are in flight, it is
//     first in line (smallest key, then the earliest asked), and no other
//     job's load with a smaller key ended within `anticipate`.
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
#include <vector>

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

// A reader's load asking for its turn.
struct ReadTurn {
  uint64_t key = 0;  // its order: smaller first (ReadOrder::BytesLeft of its job)
  uint64_t job = 0;  // its job (any id; loads of one job never wait for each other)
  // The jobs whose loads it never waits for, nor they for it (the jobs
  // sharing objects with its job: Policy::Sharers), sorted.
  std::vector<uint64_t> with;
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
    Slot(Slot&& o) noexcept
        : owner_(std::exchange(o.owner_, nullptr)), key_(o.key_), ticket_(o.ticket_), job_(o.job_) {}
    Slot& operator=(Slot&& o) noexcept;
    ~Slot();

   private:
    friend class ReadSlots;
    Slot(ReadSlots* owner, uint64_t key, uint64_t ticket, uint64_t job)
        : owner_(owner), key_(key), ticket_(ticket), job_(job) {}
    ReadSlots* owner_ = nullptr;
    uint64_t key_ = 0, ticket_ = 0, job_ = 0;
  };

  // Waits for a slot as described above; OK with *out holding it (none when
  // slots = 0), or Interrupted with nothing held. `interrupted`: the
  // caller's CancelScope predicate, or null.
  Status Acquire(const ReadTurn& turn, const std::function<bool()>* interrupted, Slot* out);

  uint32_t slots() const { return slots_; }
  ReadSlotsCounters counters() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Load {  // a load waiting, in flight, or ended a moment ago
    uint64_t key = 0;
    uint64_t ticket = 0;  // the order it asked in
    uint64_t job = 0;
    Clock::time_point ended{};  // recent_
    bool operator<(const Load& o) const {
      return key != o.key ? key < o.key : ticket < o.ticket;
    }
  };
  void Hold(const Load& load, Slot* out);  // REQUIRES: mu_ held
  void Release(const Load& load);
  // REQUIRES: mu_ held; `me` in waiting_. Sets *retry to when the answer
  // may change without a wake-up (an anticipation window ends).
  bool MayStart(const Load& me, const ReadTurn& turn, Clock::time_point now,
                Clock::time_point* retry);

  const uint32_t slots_;
  const uint32_t max_waiting_;
  const std::chrono::milliseconds max_wait_;
  const std::chrono::microseconds anticipate_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<Load> held_;  // the loads in flight
  // Loads that ended within the last `anticipate_`, oldest first.
  std::deque<Load> recent_;
  uint64_t next_ticket_ = 0;
  std::set<Load> waiting_;  // the first starts next
  uint64_t waits_ = 0, wait_ns_ = 0, overflows_ = 0, aged_ = 0;
};

}  // namespace epochfs::store
