// LowerHealth: what LOWER was asked, by kind, and whether it is answering.
//
// Every call Lower makes is counted by kind, so that "a hit costs LOWER
// nothing" is something anyone can check in `stats` and `metrics`:
//   lookup    a stat made to answer a LOOKUP (a name the kernel resolves);
//   stat      any other stat (GETATTR, fstat, the samples' checks);
//   open      a file opened to be read;
//   read      a read (a piece of at most 8 MiB);
//   list      a directory listed;
//   readlink, statfs.
// A batch of stats counts one per path.
//
// Down: LOWER is down from the first call that timed out (lower.timeout) or
// failed with an I/O error until a call succeeds again (an answer that a
// path does not exist, or may not be read, is an answer: LOWER is up). The
// two changes are logged, one line each, and `down()` is what `stats`,
// `metrics` and `top` show; while LOWER is down the daemon answers what it
// knows from memory (known_lower.h).
// Thread safety: thread-safe (atomics, and a mutex for the transitions).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "epochfs/common/status.h"

namespace epochfs::store {

enum class LowerCall : uint8_t { kLookup, kStat, kOpen, kRead, kList, kReadlink, kStatfs };
inline constexpr size_t kLowerCallKinds = 7;
// "lookup", "stat", ...: the names `stats` and `metrics` use.
const char* LowerCallName(LowerCall kind);

struct LowerCallCounts {
  std::array<uint64_t, kLowerCallKinds> by_kind{};
  uint64_t of(LowerCall kind) const { return by_kind[static_cast<size_t>(kind)]; }
};

class LowerHealth {
 public:
  void Count(LowerCall kind, uint64_t n = 1) {
    calls_[static_cast<size_t>(kind)].fetch_add(n, std::memory_order_relaxed);
  }
  // The outcome of a call (the gate's TimedOut when it was given up on, else
  // the operation's own status). `what` names it in the log line of a change.
  void Saw(const Status& s, const std::string& what);

  LowerCallCounts counts() const;
  bool down() const { return down_.load(std::memory_order_acquire); }
  // Seconds LOWER has been down (0 while up).
  double down_seconds() const;

 private:
  std::array<std::atomic<uint64_t>, kLowerCallKinds> calls_{};
  std::atomic<bool> down_{false};
  mutable std::mutex mu_;  // the transitions and since_
  std::chrono::steady_clock::time_point since_;
};

}  // namespace epochfs::store
