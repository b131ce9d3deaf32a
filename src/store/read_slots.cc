#include "epochfs/store/read_slots.h"

#include <algorithm>

namespace epochfs::store {

ReadSlots::ReadSlots(const ReadSlotsOptions& o)
    : slots_(o.slots),
      max_waiting_(o.max_waiting),
      max_wait_(o.max_wait),
      anticipate_(o.anticipate) {}

ReadSlots::Slot& ReadSlots::Slot::operator=(Slot&& o) noexcept {
  if (this != &o) {
    if (owner_ != nullptr) owner_->Release(key_);
    owner_ = std::exchange(o.owner_, nullptr);
    key_ = o.key_;
  }
  return *this;
}

ReadSlots::Slot::~Slot() {
  if (owner_ != nullptr) owner_->Release(key_);
}

bool ReadSlots::MayStart(const std::pair<uint64_t, uint64_t>& me, Clock::time_point now,
                         Clock::time_point* retry) {
  // Anticipation: a load that ended a moment ago counts as still there (its
  // job's next read is likely on its way: a loader between two files).
  while (!recent_.empty() && recent_.front().first + anticipate_ <= now) {
    recent_.pop_front();
  }
  bool first = me.first <= waiting_.begin()->first &&
               (held_keys_.empty() || me.first <= *held_keys_.begin());
  for (const auto& [when, key] : recent_) {
    if (key < me.first) {
      first = false;
      *retry = std::min(*retry, when + anticipate_);
    }
  }
  if (first) return true;
  if (held_ >= slots_ || *waiting_.begin() != me) return false;
  return *retry == Clock::time_point::max();  // no smaller key ended a moment ago
}

Status ReadSlots::Acquire(uint64_t key, const std::function<bool()>* interrupted, Slot* out) {
  if (slots_ == 0) return Status::Ok();
  std::unique_lock lock(mu_);
  if (waiting_.size() >= max_waiting_) {
    // Every load that may wait does: this one goes at once, so that waiting
    // loads never hold every FUSE thread.
    ++overflows_;
    ++held_;
    held_keys_.insert(key);
    *out = Slot(this, key);
    return Status::Ok();
  }
  const auto me = std::make_pair(key, next_ticket_++);
  waiting_.insert(me);
  Status st = Status::Ok();
  auto retry = Clock::time_point::max();
  auto may_start = [&] {
    retry = Clock::time_point::max();
    return MayStart(me, Clock::now(), &retry);
  };
  if (!may_start()) {
    const auto start = Clock::now();
    const auto deadline = start + max_wait_;
    while (!may_start()) {
      if (interrupted != nullptr && *interrupted && (*interrupted)()) {
        st = Status(Code::kInterrupted, "interrupted while waiting to read LOWER");
        break;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        ++aged_;
        break;
      }
      auto until = std::min(now + std::chrono::milliseconds(50), deadline);
      if (retry < until) until = retry;
      cv_.wait_until(lock, until);
    }
    ++waits_;
    wait_ns_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - start)
                                          .count());
  }
  waiting_.erase(me);
  if (st.ok()) {
    ++held_;
    held_keys_.insert(key);
    *out = Slot(this, key);
  }
  // The next in line may go now (its turn came, or it is first now).
  if (!waiting_.empty()) cv_.notify_all();
  return st;
}

void ReadSlots::Release(uint64_t key) {
  {
    std::lock_guard lock(mu_);
    --held_;
    held_keys_.erase(held_keys_.find(key));
    if (anticipate_.count() != 0) {
      const auto now = Clock::now();
      while (!recent_.empty() && recent_.front().first + anticipate_ <= now) {
        recent_.pop_front();
      }
      recent_.emplace_back(now, key);
    }
  }
  cv_.notify_all();
}

ReadSlotsCounters ReadSlots::counters() const {
  std::lock_guard lock(mu_);
  return {waits_, wait_ns_, overflows_, aged_, waiting_.size(), held_};
}

}  // namespace epochfs::store
