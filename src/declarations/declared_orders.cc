#include "epochfs/declarations/declared_orders.h"

#include <string>
#include <utility>

#include "epochfs/declarations/declaration_rules.h"

namespace epochfs::declarations {

Status DeclaredOrders::Positions(uint32_t epoch, const std::vector<uint32_t>& order,
                                 uint64_t samples, std::vector<int32_t>* pos) {
  const std::string what = "order " + std::to_string(epoch) + ": ";
  if (order.empty()) return InvalidArgument(what + "the order is empty");
  std::vector<int32_t> inverse(samples, kAbsent);
  for (size_t p = 0; p < order.size(); ++p) {
    const uint32_t x = order[p];
    if (x >= samples) {
      return InvalidArgument(what + "index " + std::to_string(x) + " at position " +
                             std::to_string(p) + " is out of range (" + std::to_string(samples) +
                             " samples)");
    }
    if (inverse[x] != kAbsent) {
      return InvalidArgument(what + "index " + std::to_string(x) + " appears twice (positions " +
                             std::to_string(inverse[x]) + " and " + std::to_string(p) + ")");
    }
    inverse[x] = static_cast<int32_t>(p);
  }
  if (pos != nullptr) *pos = std::move(inverse);
  return Status::Ok();
}

Status DeclaredOrders::CheckHeld(const JobView& job, uint32_t epoch) const {
  const std::string e = std::to_string(epoch);
  if (job.current && epoch < *job.current) {
    return InvalidArgument("epoch " + e + " has ended (current epoch " +
                           std::to_string(*job.current) + ")");
  }
  if (orders_.count(epoch) != 0) {  // held, and `order` differs
    if (job.current && epoch == *job.current) {
      return InvalidArgument("epoch " + e + " has begun; its order can no longer change");
    }
    if (in_use_ == InUse::kCurrentAndNext && job.current && epoch == *job.current + 1) {
      return InvalidArgument("order " + e + ": epoch " + e +
                             "'s order is in use and cannot be replaced");
    }
    return Status::Ok();  // a future order: replaced
  }
  if (Pending(job.current) >= kMaxPendingOrders) {
    std::string list;
    for (const auto& [k, o] : orders_) list += (list.empty() ? "" : ", ") + std::to_string(k);
    return InvalidArgument("too many orders declared ahead (held: " + list +
                           "); declare epoch K+1 during epoch K");
  }
  return Status::Ok();
}

Status DeclaredOrders::Check(const JobView& job, uint32_t epoch,
                             const std::vector<uint32_t>& order) const {
  if (Status s = CheckSamplesWritten(job.samples != 0, NeedsSamples::kOrder); !s.ok()) return s;
  if (Status s = CheckEpochInRun(job.epochs, epoch); !s.ok()) return s;
  if (Same(epoch, order)) return Status::Ok();
  if (Status s = Positions(epoch, order, job.samples, nullptr); !s.ok()) return s;
  return CheckHeld(job, epoch);
}

Result<bool> DeclaredOrders::Declare(const JobView& job, uint32_t epoch,
                                     std::vector<uint32_t> order) {
  if (Status s = CheckSamplesWritten(job.samples != 0, NeedsSamples::kOrder); !s.ok()) return s;
  if (Status s = CheckEpochInRun(job.epochs, epoch); !s.ok()) return s;
  if (Same(epoch, order)) return false;
  Order o;
  if (Status s = Positions(epoch, order, job.samples, &o.pos); !s.ok()) return s;
  if (Status s = CheckHeld(job, epoch); !s.ok()) return s;
  o.idx = std::move(order);
  orders_[epoch] = std::move(o);  // a replaced order keeps its node
  return true;
}

bool DeclaredOrders::Same(uint32_t epoch, const std::vector<uint32_t>& order) const {
  auto it = orders_.find(epoch);
  return it != orders_.end() && it->second.idx == order;
}

const Order* DeclaredOrders::Get(uint32_t epoch) const {
  auto it = orders_.find(epoch);
  return it == orders_.end() ? nullptr : &it->second;
}

size_t DeclaredOrders::Pending(std::optional<uint32_t> current) const {
  if (!current) return orders_.size();
  size_t n = 0;
  for (auto it = orders_.lower_bound(*current); it != orders_.end(); ++it) ++n;
  return n;
}

void DeclaredOrders::DropBefore(uint32_t epoch, std::optional<uint32_t> keep) {
  for (auto it = orders_.begin(); it != orders_.end() && it->first < epoch;) {
    it = keep && it->first == *keep ? std::next(it) : orders_.erase(it);
  }
}

}  // namespace epochfs::declarations
