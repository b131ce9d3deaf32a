#include "epochfs/sim/disk_model.h"

#include <algorithm>

namespace epochfs::sim {

DiskModel::DiskModel(const DiskSpec& spec, uint64_t budget, cache::Policy& policy,
                     bool exclusive)
    : bandwidth_(spec.bandwidth),
      latency_ns_(static_cast<uint64_t>(spec.latency_ms * 1e6)),
      exclusive_(exclusive) {
  c_.budget_bytes = budget;
  if (budget == 0) return;
  placement_ = policy.tier_placement();
  if (placement_ == nullptr) {  // as the daemon's cache front (cache_front_tier.cc)
    own_ = cache::MakeLruTier(0);
    placement_ = own_.get();
  }
  Apply(placement_->SetBudget(budget, 0), 0);
}

uint64_t DiskModel::Read(uint64_t now, uint64_t size) {
  const uint64_t start = std::max(now + latency_ns_, link_free_);
  const auto bw = static_cast<unsigned __int128>(std::max(bandwidth_, 1.0));
  const auto xfer = static_cast<uint64_t>(
      (static_cast<unsigned __int128>(size) * 1'000'000'000u + bw - 1) / bw);
  link_free_ = start + xfer;
  ++c_.reads;
  c_.bytes_read += size;
  return link_free_;
}

void DiskModel::OnRead(const cache::Access& a, bool in_ram) {
  if (!enabled()) return;
  if (exclusive_ && (in_ram || !placement_->Holds(a.object))) return;  // RAM's, not the disk's
  Apply(placement_->OnRead(a), 0);
}

void DiskModel::OnLoaded(const cache::Access& a, bool in_ram) {
  if (!enabled()) return;
  if (exclusive_ && in_ram) return;  // RAM keeps it: nothing for the disk
  Offer(a);
}

void DiskModel::EnteredRam(cache::ObjectId id) {
  if (!enabled() || !exclusive_ || !placement_->Holds(id)) return;
  placement_->OnDropped(id);
  ++c_.moved_up;
}

void DiskModel::LeftRam(const cache::Access& a) {
  if (!enabled() || !exclusive_ || placement_->Holds(a.object)) return;
  Offer(a);
}

void DiskModel::Offer(const cache::Access& a) {
  // Held already (inclusive: a load of an object the disk holds is read from
  // it, so not reached): a read.
  if (placement_->Holds(a.object)) return Apply(placement_->OnRead(a), 0);
  const cache::TierDecision d = placement_->OnLoaded(a);
  if (!d.write) ++c_.skipped;
  Apply(d, a.size);
}

void DiskModel::Drain() {
  if (!enabled()) return;
  c_.evictions += placement_->TakeEvictions().size();
}

void DiskModel::Apply(const cache::TierDecision& d, uint64_t size) {
  c_.evictions += d.evict.size();
  if (d.write) {
    ++c_.writes;
    c_.bytes_written += size;
  }
  c_.max_used_bytes = std::max(c_.max_used_bytes, placement_->used());
}

}  // namespace epochfs::sim
