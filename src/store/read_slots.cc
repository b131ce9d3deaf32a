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
    if (owner_ != nullptr) owner_->Release({key_, ticket_, job_, {}});
    owner_ = std::exchange(o.owner_, nullptr);
    key_ = o.key_;
    ticket_ = o.ticket_;
    job_ = o.job_;
  }
  return *this;
}

ReadSlots::Slot::~Slot() {
  if (owner_ != nullptr) owner_->Release({key_, ticket_, job_, {}});
}

bool ReadSlots::MayStart(const Load& me, const ReadTurn& turn, Clock::time_point now,
                         Clock::time_point* retry) {
  // Loads of the same job, or of a job sharing objects with it, are not
  // compared: their keys were taken when they asked.
  auto other = [&](uint64_t job) {
    return job != me.job && !std::binary_search(turn.with.begin(), turn.with.end(), job);
  };
  // Anticipation: a load that ended a moment ago counts as still there (its
  // job's next read is likely on its way: a loader between two files).
  while (!recent_.empty() && recent_.front().ended + anticipate_ <= now) {
    recent_.pop_front();
  }
  bool first = true;
  for (const std::set<Load>* loads : {&waiting_, &held_}) {
    for (const Load& l : *loads) {  // smallest key first: stops at the first key >= me's
      if (l.key >= me.key) break;
      if (other(l.job)) {
        first = false;
        break;
      }
    }
  }
  for (const Load& l : recent_) {
    if (l.key < me.key && other(l.job)) {
      first = false;
      *retry = std::min(*retry, l.ended + anticipate_);
    }
  }
  if (first) return true;
  if (held_.size() >= slots_ || waiting_.begin()->ticket != me.ticket) return false;
  return *retry == Clock::time_point::max();  // no smaller key ended a moment ago
}

void ReadSlots::Hold(const Load& load, Slot* out) {
  held_.insert(load);
  *out = Slot(this, load.key, load.ticket, load.job);
}

Status ReadSlots::Acquire(const ReadTurn& turn, const std::function<bool()>* interrupted,
                          Slot* out) {
  if (slots_ == 0) return Status::Ok();
  std::unique_lock lock(mu_);
  const Load me{turn.key, next_ticket_++, turn.job, {}};
  if (waiting_.size() >= max_waiting_) {
    // Every load that may wait does: this one goes at once, so that waiting
    // loads never hold every FUSE thread.
    ++overflows_;
    Hold(me, out);
    return Status::Ok();
  }
  waiting_.insert(me);
  Status st = Status::Ok();
  auto retry = Clock::time_point::max();
  auto may_start = [&] {
    retry = Clock::time_point::max();
    return MayStart(me, turn, Clock::now(), &retry);
  };
  if (!may_start()) {
    const auto start = Clock::now();
    const auto deadline = start + max_wait_;
    while (!may_start()) {
      if (interrupted != nullptr && *interrupted && (*interrupted)()) {
        st = Status(Code::kInterrupted, "interrupted while waiting to read LOWER");
        break;
      }
      const auto now = Clock::now();
      if (now >= deadline) {
        ++aged_;
        break;
      }
      auto until = std::min(now + std::chrono::milliseconds(50), deadline);
      if (retry < until) until = retry;
      cv_.wait_until(lock, until);
    }
    ++waits_;
    wait_ns_ += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
  }
  waiting_.erase(me);
  if (st.ok()) Hold(me, out);
  // The next in line may go now (its turn came, or it is first now).
  if (!waiting_.empty()) cv_.notify_all();
  return st;
}

void ReadSlots::Release(const Load& load) {
  {
    std::lock_guard lock(mu_);
    held_.erase(load);
    if (anticipate_.count() != 0) {
      const auto now = Clock::now();
      while (!recent_.empty() && recent_.front().ended + anticipate_ <= now) {
        recent_.pop_front();
      }
      recent_.push_back({load.key, load.ticket, load.job, now});
    }
  }
  cv_.notify_all();
}

ReadSlotsCounters ReadSlots::counters() const {
  std::lock_guard lock(mu_);
  return {waits_, wait_ns_, overflows_, aged_, waiting_.size(), held_.size()};
}

}  // namespace epochfs::store
