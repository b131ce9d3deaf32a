// CallWatch: tells a plain disk call that does not return (a disk that
// stopped answering) from CPU work between calls. The thread making the calls
// wraps each in a Scope; another thread asks how long the current one has
// lasted (Lasted) and gives up on the caller past its bound. Used by
// DiskTier::Open, whose start (the lock, the index, a scan) runs on a thread
// of its own, bounded by cache.disk_timeout per call rather than in all: a
// scan of a million files may take minutes, each of its calls milliseconds.
// A null watch watches nothing (Scope is then free).
// Thread safety: one thread makes the calls, any thread may ask Lasted.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace epochfs::tier {

class CallWatch {
 public:
  static uint64_t NowNs() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }

  // Marks a call for its lifetime. Scopes do not nest (the outer one's start
  // is kept).
  class Scope {
   public:
    explicit Scope(CallWatch* w) : w_(w) {
      if (w_ == nullptr) return;
      uint64_t none = 0;
      if (!w_->since_.compare_exchange_strong(none, NowNs() | 1)) w_ = nullptr;  // nested
    }
    ~Scope() {
      if (w_ != nullptr) w_->since_.store(0);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CallWatch* w_;
  };

  // f(), watched as one call.
  template <typename F>
  static auto Run(CallWatch* w, F&& f) {
    Scope call(w);
    return f();
  }

  // Nanoseconds the current call has lasted at `now`; 0 between calls.
  uint64_t Lasted(uint64_t now) const {
    const uint64_t since = since_.load();
    return since == 0 || now < since ? 0 : now - since;
  }

 private:
  std::atomic<uint64_t> since_{0};  // when the current call began (| 1); 0: none
};

}  // namespace epochfs::tier
