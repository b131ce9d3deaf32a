// WarmProgress: what each running `epochfs warm` tells the daemon through
// `.epochfs/warm`, so that `stats` (its "warm" rows) and `epochfs top` show it.
//
// A report is one line, "FILES_DONE FILES_TOTAL BYTES_DONE BYTES_TOTAL ERRORS
// STATE", STATE one of `walking` (the totals still grow), `reading`, `done`;
// it replaces the writer's row (one row per process: its pid as the daemon
// sees it, and its uid). Done counts never exceed the totals. A row lives while
// its process does; a process that ended after `done` leaves its last row
// (the newest kMaxFinished of each user are kept), one that ended before
// leaves nothing. A user (root excepted) may have kMaxRunningPerUser rows of
// live processes at once (NoSpace past it); a caller whose pid the daemon
// cannot see (0) is refused (NotPermitted).
// Rows(viewer): root's view is every row, another user's only their own.
// Thread safety: thread-safe (one mutex).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "epochfs/common/status.h"
#include "epochfs/control/control_plane.h"

namespace epochfs::control {

struct WarmRow {
  pid_t pid = 0;
  uid_t uid = 0;
  uint64_t files_done = 0, files_total = 0, bytes_done = 0, bytes_total = 0, errors = 0;
  std::string state;  // "walking", "reading", "done"
  uint64_t seq = 0;   // report order (newest finished rows are kept)
  bool ended = false; // its process exited (after `done`)
};

class WarmProgress {
 public:
  static constexpr size_t kMaxRunningPerUser = 8;
  static constexpr size_t kMaxFinished = 4;
  using AliveFn = std::function<bool(pid_t)>;

  // `alive(pid)`: does the process run? (default: kill(pid, 0), and not a
  // zombie in /proc/PID/stat).
  explicit WarmProgress(AliveFn alive = {});

  Status Report(const Caller& who, const std::string& text);
  std::vector<WarmRow> Rows(uid_t viewer) const;
  // Rows(viewer) as the `warm` array of stats.
  nlohmann::json Json(uid_t viewer) const;

 private:
  void Prune() const;  // REQUIRES: mu_ held

  AliveFn alive_;
  mutable std::mutex mu_;
  mutable std::vector<WarmRow> rows_;
  uint64_t seq_ = 0;
};

}  // namespace epochfs::control
