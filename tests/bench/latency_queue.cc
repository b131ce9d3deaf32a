#include "latency_queue.h"

namespace latencyfs {

void TimerQueue::Push(Clock::time_point at, std::unique_ptr<Answer> answer) {
  std::lock_guard lk(mu_);
  const bool earliest = queue_.empty() || at < queue_.top().at;
  queue_.push(Due{at, seq_++, std::move(answer)});
  if (earliest) cv_.notify_one();  // else the thread wakes sooner anyway
}

void TimerQueue::Stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_one();
}

void TimerQueue::Run() {
  std::vector<Due> ready;
  std::unique_lock lk(mu_);
  while (true) {
    if (queue_.empty()) {
      if (stop_) return;
      cv_.wait(lk);
      continue;
    }
    const Clock::time_point wake = queue_.top().at + slack_;
    if (!stop_ && Clock::now() < wake) {
      cv_.wait_until(lk, wake);  // or sooner: an earlier answer, or the stop
      continue;
    }
    const Clock::time_point now = Clock::now();
    while (!queue_.empty() && (stop_ || queue_.top().at <= now)) {
      // top() is const; the element is popped right after it is moved from.
      ready.push_back(std::move(const_cast<Due&>(queue_.top())));
      queue_.pop();
    }
    lk.unlock();
    for (Due& d : ready) d.answer->Send();
    ready.clear();
    lk.lock();
  }
}

}  // namespace latencyfs
