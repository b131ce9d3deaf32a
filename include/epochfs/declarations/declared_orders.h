// DeclaredOrders: one job's declared epoch orders, and the one check every
// declaration of an order passes.
//
// An order is a permutation of a subset of the job's sample indices: epoch K
// reads them in that order. The control registry's EpochTracker holds the
// orders it attributes reads by; each job-aware cache policy (epoch, future)
// holds the orders it plans by; all of them store them here and accept or
// refuse an order by Check, so that a job meets one set of rules and one cap:
//   - the sample list is written, the epoch is within the run;
//   - the order is non-empty, every index is in range and none appears twice;
//   - re-declaring an order exactly as held is accepted and changes nothing
//     (a restarted job declares itself again), whatever its epoch;
//   - an epoch before the current one has ended: its order cannot be declared;
//   - an order in use cannot change: the current epoch's once it has begun,
//     and, for a holder that plans with it (InUse::kCurrentAndNext, the cache
//     policies), the next epoch's too; any other held order is replaced;
//   - at most kMaxPendingOrders orders of the current and later epochs (all
//     held orders before the first epoch begins) are held at once; the
//     previous epoch's, kept while its late reads come, is not counted.
// Messages are the ones a job reads in its `status` (last_error); the
// registry's parser (control_parse.h) refuses a malformed order text first,
// naming the token, so the messages on the order's content are seen only by
// callers of a policy alone (the simulator, tests).
//
// The holder says what it knows of the job (JobView, declaration_rules.h)
// and drops the orders it no longer needs (erase, DropBefore): holders keep
// different old orders. Pointers and iterators to a held order stay valid
// until it is erased (a replaced order is replaced in place).
//
// Thread safety: not thread-safe; the holder serialises calls.
// Memory: per held order, 4 bytes per sample of the job (positions) plus 4
// bytes per index of the order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/declarations/declaration_rules.h"

namespace epochfs::declarations {

// Orders of the current and later epochs a job may have declared at once
// (epochfs-control(7): the current, the next and a few ahead).
inline constexpr size_t kMaxPendingOrders = 4;

// An order's position of a sample it leaves out.
inline constexpr int32_t kAbsent = -1;

struct Order {
  std::vector<uint32_t> idx;  // position → sample index
  std::vector<int32_t> pos;   // sample index → position in idx, or kAbsent
  int32_t PosOf(uint32_t sample) const { return pos[sample]; }
  bool Holds(uint32_t sample) const { return sample < pos.size() && pos[sample] != kAbsent; }
  uint64_t size() const { return idx.size(); }
};

// Which held orders a holder uses once their epoch is near.
enum class InUse : uint8_t {
  kCurrent,         // the current epoch's (the registry's tracker)
  kCurrentAndNext,  // the current and the next epoch's (policies plan K+1 during K)
};

class DeclaredOrders {
 public:
  using Map = std::map<uint32_t, Order>;  // epoch → order
  using const_iterator = Map::const_iterator;

  explicit DeclaredOrders(InUse in_use) : in_use_(in_use) {}

  // The rules above. OK exactly when Declare would succeed.
  Status Check(const JobView& job, uint32_t epoch, const std::vector<uint32_t>& order) const;
  // Check, then hold `order` as epoch `epoch`'s. Returns true when it was
  // stored (new, or replacing a different one), false when it equals the
  // order held (nothing changes). Nothing changes on an error.
  Result<bool> Declare(const JobView& job, uint32_t epoch, std::vector<uint32_t> order);

  // True when `order` equals the order held for `epoch`.
  bool Same(uint32_t epoch, const std::vector<uint32_t>& order) const;
  // The order held for `epoch`, nullptr when none.
  const Order* Get(uint32_t epoch) const;
  // Orders held for `current` and later (all when no epoch has begun).
  size_t Pending(std::optional<uint32_t> current) const;
  // Drops the orders of epochs before `epoch`, except `keep`'s.
  void DropBefore(uint32_t epoch, std::optional<uint32_t> keep = std::nullopt);
  void clear() { orders_.clear(); }

  // Read access to the held orders, by epoch.
  bool empty() const { return orders_.empty(); }
  size_t size() const { return orders_.size(); }
  const_iterator begin() const { return orders_.begin(); }
  const_iterator end() const { return orders_.end(); }
  const_iterator find(uint32_t epoch) const { return orders_.find(epoch); }
  size_t count(uint32_t epoch) const { return orders_.count(epoch); }
  const_iterator erase(const_iterator it) { return orders_.erase(it); }
  size_t erase(uint32_t epoch) { return orders_.erase(epoch); }

 private:
  // Positions of `order` over `samples` samples; InvalidArgument for an empty
  // order, an index out of range or one listed twice.
  static Status Positions(uint32_t epoch, const std::vector<uint32_t>& order, uint64_t samples,
                          std::vector<int32_t>* pos);
  Status CheckHeld(const JobView& job, uint32_t epoch) const;

  InUse in_use_;
  Map orders_;
};

}  // namespace epochfs::declarations
