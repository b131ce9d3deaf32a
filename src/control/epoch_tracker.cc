#include "epochfs/control/epoch_tracker.h"

#include <algorithm>
#include <string>

#include "epochfs/control/control_parse.h"
#include "epochfs/declarations/declaration_rules.h"

namespace epochfs::control {

EpochTracker::EpochTracker(uint32_t sample_count, EpochTrackerOptions options)
    : opt_(options), last_(std::max<uint32_t>(sample_count, 1), kNever) {
  opt_.batch_size = std::max<uint32_t>(opt_.batch_size, 1);
  opt_.loaders = std::max<uint32_t>(opt_.loaders, 1);
  opt_.prefetch_factor = std::max<uint32_t>(opt_.prefetch_factor, 1);
  window_ = uint64_t{opt_.loaders} * opt_.prefetch_factor * opt_.batch_size;
}

declarations::JobView EpochTracker::View() const {
  return {last_.size(), /*epochs: the registry checks them*/ 0, cur_};
}

Status EpochTracker::CheckOrder(uint32_t epoch, const std::vector<uint32_t>& order) const {
  return orders_.Check(View(), epoch, order);
}

Status EpochTracker::SetOrder(uint32_t epoch, const std::vector<uint32_t>& order) {
  Result<bool> stored = orders_.Declare(View(), epoch, order);
  if (!stored.ok()) return stored.status();
  if (!stored.value()) return Status::Ok();  // the order held
  if (cur_ && epoch == *cur_) {
    // The current epoch ran without an order: only reads of samples in it
    // count, or reads outside the order would end the epoch early.
    cur_count_ = 0;
    for (uint32_t idx : order) cur_count_ += last_[idx] == epoch ? 1 : 0;
  }
  return Status::Ok();
}

Result<bool> EpochTracker::MarkEpoch(uint32_t epoch) {
  if (Status s = declarations::CheckEpochMarker(cur_, epoch); !s.ok()) return s;
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
  const declarations::Order* o = orders_.Get(epoch);
  return o == nullptr ? -1 : o->PosOf(sample);
}

bool EpochTracker::Belongs(uint32_t epoch, uint32_t sample) const {
  const declarations::Order* o = orders_.Get(epoch);
  return o == nullptr || o->Holds(sample);
}

uint64_t EpochTracker::EpochSize(uint32_t epoch) const {
  const declarations::Order* o = orders_.Get(epoch);
  return o == nullptr ? last_.size() : o->size();
}

bool EpochTracker::NearlyComplete(uint32_t epoch, uint64_t count) const {
  if (!HasOrder(epoch)) return true;
  return count + window_ >= EpochSize(epoch);
}

bool EpochTracker::InPendingOrders(uint32_t sample) const {
  if (sample >= last_.size()) return false;
  for (const auto& [k, o] : orders_) {
    if (o.Holds(sample)) return true;
  }
  return false;
}

std::vector<uint32_t> EpochTracker::declared_epochs() const {
  std::vector<uint32_t> v;
  for (const auto& [k, o] : orders_) v.push_back(k);
  return v;
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
  orders_.DropBefore(prev_open_ ? epoch - 1 : epoch);
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
        if (o.Holds(sample)) {
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
