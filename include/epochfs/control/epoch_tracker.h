// EpochTracker: for one job, which epoch each access belongs to, and where it
// falls in that epoch's declared order (its batch).
//
// The job may say when an epoch starts (`epoch` file → MarkEpoch). Without it,
// epochs are inferred from the accesses (control protocol v1):
//   - a sample read for the first time in the current epoch K counts for K;
//   - a sample already consumed in K counts for K+1 (K+1 begins);
//   - loaders read ahead and out of order within a window of
//     loaders × prefetch_factor batches, so K stays open for late arrivals
//     after K+1 began: a sample of K's order not yet consumed in K counts for K
//     until K is complete or the window has passed (then K closes and late
//     samples count for K+1).
//   - a re-read does not start K+1 while K's declared order still has more
//     than a window of unread samples (double opens within an epoch are
//     repeats, not a new epoch). Without a declared order for K there is no
//     such guard.
//   - orders may be subsets (DistributedSampler shards): a sample outside K's
//     order that belongs to K+1's order starts K+1 once K is within a window of
//     complete; one in neither order is a stray access of K.
// Before the first epoch begins, the first access starts the lowest declared
// epoch whose order holds the sample (else the lowest declared epoch, else 0).
//
// Orders are kept for the open epochs and the future: older ones are dropped
// as epochs advance. They are held in a DeclaredOrders and checked by its
// rules (include/epochfs/declarations/declared_orders.h): at most
// declarations::kMaxPendingOrders of the current and later epochs.
//
// Thread safety: not thread-safe; the JobRegistry serialises all calls.
// Memory: 4 bytes per sample for the consumption record, plus, for each held
// order, 4 bytes per sample and 4 per index of the order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/declarations/declared_orders.h"

namespace epochfs::control {

struct EpochTrackerOptions {
  uint32_t batch_size = 1;       // samples per batch (config batch_size), >= 1
  uint32_t loaders = 1;          // parallel loaders (config loaders), >= 1
  uint32_t prefetch_factor = 2;  // batches each loader reads ahead (PyTorch default 2)
};

// What the tracker made of one access.
struct TrackedAccess {
  uint32_t epoch = 0;                  // the epoch this access counts for
  int64_t position = -1;               // index in that epoch's declared order, -1 if none
  int64_t batch = -1;                  // position / batch_size, -1 if none
  bool repeat = false;                 // already consumed in `epoch` (not counted again)
  std::optional<uint32_t> began;       // this access began epoch *began (call BeginEpoch)
  std::optional<uint32_t> completed;   // epoch *completed has now consumed its whole order
};

class EpochTracker {
 public:
  // REQUIRES: sample_count >= 1.
  EpochTracker(uint32_t sample_count, EpochTrackerOptions options);
  EpochTracker(const EpochTracker&) = delete;
  EpochTracker& operator=(const EpochTracker&) = delete;

  // Declares epoch `epoch`'s order, by the rules of DeclaredOrders (InUse::
  // kCurrent: the current epoch's order cannot change once it has begun, a
  // future epoch's is replaced; re-declaring the same order is a no-op), with
  // the epoch unbounded (the registry checks the run's length). Declaring the
  // order of the current epoch (begun without one) counts as consumed only
  // the samples of `order` already read in it.
  Status SetOrder(uint32_t epoch, const std::vector<uint32_t>& order);
  // The checks of SetOrder alone: OK exactly when SetOrder would succeed.
  Status CheckOrder(uint32_t epoch, const std::vector<uint32_t>& order) const;

  // True when `order` equals the order held for `epoch`.
  bool SameOrder(uint32_t epoch, const std::vector<uint32_t>& order) const {
    return orders_.Same(epoch, order);
  }

  // Explicit marker: the job starts `epoch` now. Returns true when this began
  // a new epoch (false: it is already the current one). InvalidArgument when
  // `epoch` is older than the current epoch.
  Result<bool> MarkEpoch(uint32_t epoch);

  // The job's processes died and a restarted job re-attached: it reads the
  // current epoch again (from its start, or from a checkpoint inside it).
  // What was consumed of the current epoch is forgotten, so that re-reads
  // count for it and do not begin the next one; the previous epoch closes (no
  // late reads come from dead loaders). Orders stay. No epoch begun: no-op.
  void RestartEpoch();

  // Records one access to sample `sample`. REQUIRES: sample < sample_count().
  TrackedAccess OnAccess(uint32_t sample);

  bool HasOrder(uint32_t epoch) const { return orders_.count(epoch) != 0; }
  // The length of epoch `epoch`'s held order, 0 when none is held.
  uint64_t OrderSize(uint32_t epoch) const {
    const declarations::Order* o = orders_.Get(epoch);
    return o == nullptr ? 0 : o->size();
  }
  // True when `sample` appears in a held order of the current epoch or later
  // (before any epoch began: in any held order).
  bool InPendingOrders(uint32_t sample) const;
  std::optional<uint32_t> current_epoch() const { return cur_; }
  // The previous epoch while it still accepts late arrivals.
  std::optional<uint32_t> open_previous_epoch() const {
    return prev_open_ ? std::optional<uint32_t>(*cur_ - 1) : std::nullopt;
  }
  std::vector<uint32_t> declared_epochs() const;
  // The current epoch has consumed its whole order (every sample once).
  bool current_complete() const { return cur_ && cur_count_ >= EpochSize(*cur_); }
  // Samples counted for the current epoch so far (repeats excluded).
  uint64_t consumed_in_current() const { return cur_ ? cur_count_ : 0; }
  uint32_t sample_count() const { return static_cast<uint32_t>(last_.size()); }
  uint64_t window_samples() const { return window_; }

 private:
  static constexpr uint32_t kNever = UINT32_MAX;  // sample never consumed

  declarations::JobView View() const;
  int64_t PositionIn(uint32_t epoch, uint32_t sample) const;
  // Orders absent: every sample belongs to the epoch.
  bool Belongs(uint32_t epoch, uint32_t sample) const;
  uint64_t EpochSize(uint32_t epoch) const;
  // K is close enough to complete that K+1 may begin.
  bool NearlyComplete(uint32_t epoch, uint64_t count) const;
  void Begin(uint32_t epoch, TrackedAccess* out);
  void Count(uint32_t sample, uint32_t epoch, TrackedAccess* out);
  void ClosePrevious();

  EpochTrackerOptions opt_;
  uint64_t window_;
  std::vector<uint32_t> last_;         // sample → last epoch it was consumed in
  declarations::DeclaredOrders orders_{declarations::InUse::kCurrent};
  std::optional<uint32_t> cur_;        // current epoch
  uint64_t cur_count_ = 0;             // samples consumed in cur_
  bool prev_open_ = false;             // cur_ - 1 accepts late arrivals
  uint64_t prev_count_ = 0;            // samples consumed in cur_ - 1
  uint64_t since_begin_ = 0;           // accesses counted for cur_ since it began
};

}  // namespace epochfs::control
