#include "epochfs/control/epoch_tracker.h"

#include <algorithm>
#include <string>

#include "epochfs/control/control_parse.h"

namespace epochfs::control {

EpochTracker::EpochTracker(uint32_t sample_count, EpochTrackerOptions options)
    : opt_(options), last_(std::max<uint32_t>(sample_count, 1), kNever) {
  opt_.batch_size = std::max<uint32_t>(opt_.batch_size, 1);
  opt_.loaders = std::max<uint32_t>(opt_.loaders, 1);
  opt_.prefetch_factor = std::max<uint32_t>(opt_.prefetch_factor, 1);
  window_ = uint64_t{opt_.loaders} * opt_.prefetch_factor * opt_.batch_size;
}

bool EpochTracker::SameOrder(uint32_t epoch, const std::vector<uint32_t>& order) const {
  auto it = orders_.find(epoch);
  if (it == orders_.end() || it->second.size != order.size()) return false;
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] >= last_.size() || it->second.pos[order[i]] != i) return false;
  }
  return true;
}

Status EpochTracker::CheckOrder(uint32_t epoch, const std::vector<uint32_t>& order) const {
  const std::string e = std::to_string(epoch);
  if (cur_ && epoch < *cur_) {
    if (SameOrder(epoch, order)) return Status::Ok();
    return InvalidArgument("epoch " + e + " has ended (current epoch " +
                           std::to_string(*cur_) + ")");
  }
  auto it = orders_.find(epoch);
  if (it != orders_.end()) {
    if (SameOrder(epoch, order)) return Status::Ok();
    if (cur_ && epoch == *cur_) {
      return InvalidArgument("epoch " + e +
                             " has begun; its order can no longer change");
    }
  } else {
    size_t held = 0;
    for (const auto& [k, o] : orders_) held += (!cur_ || k >= *cur_) ? 1 : 0;
    if (held >= kMaxPendingOrders) {
      std::string list;
      for (const auto& [k, o] : orders_) list += (list.empty() ? "" : ", ") + std::to_string(k);
      return InvalidArgument("too many orders declared ahead (held: " + list +
                             "); declare epoch K+1 during epoch K");
    }
  }
  for (uint32_t idx : order) {
    if (idx >= last_.size()) return InvalidArgument("index out of range for epoch " + e);
  }
  return Status::Ok();
}

Status EpochTracker::SetOrder(uint32_t epoch, const std::vector<uint32_t>& order) {
  if (Status s = CheckOrder(epoch, order); !s.ok()) return s;
  if (SameOrder(epoch, order)) return Status::Ok();
  Order o;
  o.pos.assign(last_.size(), kAbsent);
  for (size_t i = 0; i < order.size(); ++i) o.pos[order[i]] = static_cast<uint32_t>(i);
  o.size = order.size();
  orders_[epoch] = std::move(o);
  if (cur_ && epoch == *cur_) {
    // The current epoch ran without an order: only reads of samples in it
    // count, or reads outside the order would end the epoch early.
    cur_count_ = 0;
    for (uint32_t idx : order) cur_count_ += last_[idx] == epoch ? 1 : 0;
  }
  return Status::Ok();
}

Result<bool> EpochTracker::MarkEpoch(uint32_t epoch) {
  if (cur_ && epoch < *cur_) {
    return InvalidArgument(std::to_string(epoch) + " is before the current epoch " +
                           std::to_string(*cur_));
  }
  if (cur_ && epoch == *cur_) return false;
  TrackedAccess ignored;
  Begin(epoch, &ignored);
  return true;
}

void EpochTracker::RestartEpoch() {
  if (!cur_) return;
  ClosePrevious();
  for (uint32_t& e : last_) {
    if (e == *cur_) e = kNever;
  }
  cur_count_ = 0;
  since_begin_ = 0;
}

int64_t EpochTracker::PositionIn(uint32_t epoch, uint32_t sample) const {
  auto it = orders_.find(epoch);
  if (it == orders_.end() || it->second.pos[sample] == kAbsent) return -1;
  return it->second.pos[sample];
}

bool EpochTracker::Belongs(uint32_t epoch, uint32_t sample) const {
  auto it = orders_.find(epoch);
  return it == orders_.end() || it->second.pos[sample] != kAbsent;
}

uint64_t EpochTracker::EpochSize(uint32_t epoch) const {
  auto it = orders_.find(epoch);
  return it == orders_.end() ? last_.size() : it->second.size;
}

bool EpochTracker::NearlyComplete(uint32_t epoch, uint64_t count) const {
  if (!HasOrder(epoch)) return true;
  return count + window_ >= EpochSize(epoch);
}

bool EpochTracker::InPendingOrders(uint32_t sample) const {
  if (sample >= last_.size()) return false;
  for (const auto& [k, o] : orders_) {
    if (o.pos[sample] != kAbsent) return true;
  }
  return false;
}

std::vector<uint32_t> EpochTracker::declared_epochs() const {
  std::vector<uint32_t> v;
  for (const auto& [k, o] : orders_) v.push_back(k);
  return v;
}

void EpochTracker::DropOrdersBefore(uint32_t epoch) {
  orders_.erase(orders_.begin(), orders_.lower_bound(epoch));
}

void EpochTracker::ClosePrevious() {
  if (!prev_open_) return;
  prev_open_ = false;
  orders_.erase(*cur_ - 1);
}

void EpochTracker::Begin(uint32_t epoch, TrackedAccess* out) {
  if (cur_ && epoch == *cur_ + 1) {
    prev_count_ = cur_count_;
    prev_open_ = cur_count_ < EpochSize(*cur_);
  } else {
    prev_open_ = false;
    prev_count_ = 0;
  }
  cur_ = epoch;
  cur_count_ = 0;
  since_begin_ = 0;
  DropOrdersBefore(prev_open_ ? epoch - 1 : epoch);
  out->began = epoch;
}

void EpochTracker::Count(uint32_t sample, uint32_t epoch, TrackedAccess* out) {
  out->epoch = epoch;
  out->position = PositionIn(epoch, sample);
  out->batch = out->position < 0 ? -1 : out->position / opt_.batch_size;
  const bool belongs = Belongs(epoch, sample);
  last_[sample] = epoch;
  if (epoch == *cur_) {
    if (belongs) {
      ++cur_count_;
      if (cur_count_ == EpochSize(epoch)) out->completed = epoch;
    }
    if (prev_open_ && ++since_begin_ > window_) ClosePrevious();
  } else if (prev_open_ && epoch + 1 == *cur_) {
    if (belongs && ++prev_count_ == EpochSize(epoch)) {
      out->completed = epoch;
      ClosePrevious();
    }
  }
}

TrackedAccess EpochTracker::OnAccess(uint32_t sample) {
  TrackedAccess out;
  if (sample >= last_.size()) {  // REQUIRES violated: count nothing
    out.epoch = cur_.value_or(0);
    return out;
  }
  if (!cur_) {
    uint32_t k = 0;
    if (!orders_.empty()) {
      k = orders_.begin()->first;
      for (const auto& [e, o] : orders_) {
        if (o.pos[sample] != kAbsent) {
          k = e;
          break;
        }
      }
    }
    Begin(k, &out);
    Count(sample, k, &out);
    return out;
  }
  const uint32_t k = *cur_;
  const bool can_advance = k + 1 < kMaxEpochs && NearlyComplete(k, cur_count_);
  if (last_[sample] == k) {  // already consumed in K
    if (can_advance) {
      Begin(k + 1, &out);
      Count(sample, k + 1, &out);
    } else {
      out.epoch = k;
      out.repeat = true;
      out.position = PositionIn(k, sample);
      out.batch = out.position < 0 ? -1 : out.position / opt_.batch_size;
    }
    return out;
  }
  if (prev_open_ && last_[sample] != k - 1 && Belongs(k - 1, sample)) {  // late arrival
    Count(sample, k - 1, &out);
    return out;
  }
  if (Belongs(k, sample)) {
    Count(sample, k, &out);
    return out;
  }
  // Outside K's declared order.
  const bool in_next = HasOrder(k + 1) && PositionIn(k + 1, sample) >= 0;
  if (can_advance && (in_next || cur_count_ >= EpochSize(k))) {
    Begin(k + 1, &out);
    Count(sample, k + 1, &out);
    return out;
  }
  Count(sample, k, &out);  // a stray access of K
  return out;
}

}  // namespace epochfs::control
