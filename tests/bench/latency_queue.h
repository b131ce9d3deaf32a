// TimerQueue: latencyfs's answers, each sent when its time is due (part of
// the latencyfs benchmark fixture, tests/bench/latencyfs.cc).
//
// A waiting call is an Answer (its reply, made when the call arrived) and
// the time it is due; one thread (Run) sends them, earliest first. Answers
// are sent in batches: the thread wakes when the earliest is due plus
// `slack` and sends every answer then due, so that one wake-up (a futex wait
// and a context switch, the most of a waiting call's cost otherwise) serves
// all the calls that came due within it. An answer is never sent early.
//
// Ownership: the queue owns each Answer until it is sent (then destroyed).
// Thread safety: Push and Stop from any thread; Run on one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <queue>
#include <utility>
#include <vector>

namespace latencyfs {

using Clock = std::chrono::steady_clock;

// One waiting call's reply.
class Answer {
 public:
  virtual ~Answer() = default;
  virtual void Send() = 0;
};

template <class F>
class FnAnswer final : public Answer {
 public:
  explicit FnAnswer(F f) : f_(std::move(f)) {}
  void Send() override { f_(); }

 private:
  F f_;
};

// An Answer that calls `f()` (which may hold move-only state).
template <class F>
std::unique_ptr<Answer> MakeAnswer(F f) {
  return std::make_unique<FnAnswer<F>>(std::move(f));
}

class TimerQueue {
 public:
  explicit TimerQueue(std::chrono::microseconds slack) : slack_(slack) {}
  // `answer` is sent at `at` or up to the slack later.
  void Push(Clock::time_point at, std::unique_ptr<Answer> answer);
  // Sends answers as they come due until Stop; then sends what still waits
  // at once, and returns.
  void Run();
  void Stop();

 private:
  struct Due {
    Clock::time_point at;
    uint64_t seq;  // arrival order among equal times
    std::unique_ptr<Answer> answer;
    bool operator>(const Due& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  const std::chrono::microseconds slack_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> queue_;  // mu_
  uint64_t seq_ = 0;                                                  // mu_
  bool stop_ = false;                                                 // mu_
};

}  // namespace latencyfs
