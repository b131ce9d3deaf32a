// CallCounts: latencyfs's calls counted by kind, in all and by process (part
// of the latencyfs benchmark fixture, tests/bench/latencyfs.cc), and the
// text its `user.faultfs.counts` attribute reads, the same as faultfs's
// but for its kinds: "lookup=N stat=N open=N read=N opendir=N list=N
// readlink=N statfs=N access=N in_flight=N max_in_flight=N".
//
// A call is in flight from Begin to End (just before its answer is sent). A calling
// thread's process (thread group) is read from /proc once and remembered (at
// most 65536 threads; past that the memory starts again).
// Thread safety: thread-safe (one mutex).
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace latencyfs {

enum Kind { kLookup, kStat, kOpen, kRead, kOpendir, kList, kReadlink, kStatfs, kAccess, kKinds };

class CallCounts {
 public:
  // A call of `kind` from thread `tid` starts; returns its process, for End.
  pid_t Begin(Kind kind, pid_t tid);
  void End(pid_t process);
  // The counts of all calls (`process` empty) or of one process's.
  std::string Text(std::optional<pid_t> process);

 private:
  struct Tally {
    std::array<uint64_t, kKinds> calls{};
    uint64_t in_flight = 0, max_in_flight = 0;
  };
  pid_t ProcessOf(pid_t tid);  // REQUIRES: mu_ not held

  std::mutex mu_;
  Tally all_;                                       // mu_
  std::map<pid_t, Tally> by_process_;               // mu_
  std::unordered_map<pid_t, pid_t> process_of_;     // thread -> thread group; mu_
};

}  // namespace latencyfs
