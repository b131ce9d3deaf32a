// Background: detaching from the terminal with an exit status that says
// whether the mount is in place.
//
// Start() forks. The parent waits for the child's one report and exits: 0
// once the child has called Ready() (the mount answered a request through
// the kernel), 1 with the child's reason on stderr after Failed(why) or when
// the child ends without reporting. The child detaches (setsid, cwd /, stdio
// on /dev/null) and carries on.
// Used instead of fuse_daemonize, whose parent exits 0 as soon as the child
// has forked, before the kernel's INIT has been answered.
// Thread safety: Ready/Failed may be called from any thread; the first report
// wins, later ones are ignored.
#pragma once

#include <atomic>
#include <string>

#include "epochfs/common/status.h"

namespace epochfs {

class Background {
 public:
  // Returns in the child only (Internal when fork or pipe fails, in the
  // original process). REQUIRES: no threads running yet.
  static Status Start(Background* out);
  Background() = default;
  ~Background();  // unreported: as Failed("the daemon ended before ...")
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  void Ready();
  void Failed(const std::string& why);

 private:
  void Report(const std::string& msg);
  std::atomic<int> fd_{-1};  // write end of the pipe to the waiting parent
};

}  // namespace epochfs
