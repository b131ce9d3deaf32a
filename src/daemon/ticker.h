// Ticker: a thread that calls a function every interval until stopped (the
// memory governor's samples, the orphan reaper's checks).
//
// Start() starts the thread; the first call comes one interval later. Stop()
// (also on destruction) wakes the thread at once, lets a call in progress
// finish and joins; Start() may follow again. Thread safety: Start/Stop from
// one thread; the function runs on the ticker's thread, one call at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace epochfs {

class Ticker {
 public:
  Ticker() = default;
  ~Ticker() { Stop(); }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

  // REQUIRES: not running (never started, or stopped).
  void Start(std::chrono::nanoseconds interval, std::function<void()> tick) {
    stop_ = false;
    thread_ = std::thread([this, interval, tick = std::move(tick)] {
      std::unique_lock lock(mu_);
      while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
        lock.unlock();
        tick();
        lock.lock();
      }
    });
  }

  void Stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_ while the thread runs
  std::thread thread_;
};

}  // namespace epochfs
