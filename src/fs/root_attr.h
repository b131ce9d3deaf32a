// RootAttr: the attributes of the mount's root, answered while LOWER hangs.
//
// Every path walk through the mount checks the root's attributes, and once
// the kernel's copy expires (fuse.permission_timeout on a shared mount) it
// asks for them again. Answered from a stat of LOWER's root, a hung LOWER
// would take the whole mount down with it: the control tree (.epochfs/) and
// every cached file sit behind that walk. So the root's stat is made by a
// thread of RootAttr's own, one at a time, and a GETATTR of the root waits
// for it only briefly (under "immutable" the stat is answered from what is
// known of LOWER, store/known_lower.h, and costs LOWER nothing):
//   - the stat answers within `grace` (min(lower.timeout, 2 s)): its
//     attributes, fresh, become the last known ones;
//   - it does not (LOWER hangs) or it fails: the last known attributes stand,
//     at once, for as long as LOWER does not answer (the stat goes on in the
//     background, bounded by lower.timeout, and the next GETATTR starts
//     another); a failure is logged once until a stat succeeds again;
//   - nothing is known yet (the first stat of the root): the caller waits
//     for the stat, bounded by lower.timeout, and gets its error.
// Thread safety: thread-safe. The thread starts at the first Get (after the
// daemon has forked) and is joined at destruction (within lower.timeout).
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

#include "epochfs/common/status.h"
#include "epochfs/store/known_lower.h"

namespace epochfs::fs {

class RootAttr {
 public:
  // REQUIRES: `lower` outlives the RootAttr.
  RootAttr(const store::KnownLower& lower, std::chrono::milliseconds grace);
  ~RootAttr();
  RootAttr(const RootAttr&) = delete;
  RootAttr& operator=(const RootAttr&) = delete;

  // The root's attributes as described above.
  Result<struct stat> Get();

 private:
  void Loop();

  const store::KnownLower& lower_;  // what is known of LOWER
  const std::chrono::milliseconds grace_;
  std::mutex mu_;
  std::condition_variable wanted_cv_;  // a stat is wanted, or stop
  std::condition_variable done_cv_;    // a stat finished
  bool wanted_ = false;                // guarded by mu_
  bool running_ = false;               // guarded by mu_: a stat is under way
  bool stop_ = false;                  // guarded by mu_
  uint64_t done_ = 0;                  // guarded by mu_: stats finished
  Status last_status_;                 // guarded by mu_: of the last stat finished
  std::optional<struct stat> known_;   // guarded by mu_: the last attributes LOWER gave
  bool warned_ = false;                // guarded by mu_: the failure is logged
  std::thread thread_;                 // guarded by mu_ (started once)
};

}  // namespace epochfs::fs
