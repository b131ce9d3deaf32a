// NestedMount: a FUSE session of its own mounted inside the mount
// (fuse.no_open; fs/fs_types.h, Role).
//
// The dataset session answers OPEN and FLUSH with ENOSYS, which the kernel
// takes for the whole connection; control files need both (a control write is
// taken when its writer closes it), and so do spill files (written, synced,
// their handles counted). So `.epochfs` and `.spill` are mounted again, on
// themselves: a second session rooted at the control directory on the dataset
// session's (empty) `.epochfs` directory, and a third rooted at the spill area
// on its (empty) `.spill`. Root mounts them itself; a user's are mounted by
// the set-uid fusermount3, which the kernel lets into the dataset session only
// with allow_other (the daemon refuses fuse.no_open to a user without it) and
// which mounts only on a directory the user may write (the dataset session
// gives both to the daemon's user).
//
// Start mounts and serves on a thread of its own; the destructor unmounts
// (lazily: `umount -R MOUNTPOINT` unmounts them all, a plain unmount of
// MOUNTPOINT is refused by the kernel while one is on it) and waits for the
// thread. Errors: Start returns the mount's error (Session::Mount).
// Thread safety: one thread owns a NestedMount.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "epochfs/common/status.h"
#include "epochfs/fs/session.h"

namespace epochfs {

class NestedMount {
 public:
  // REQUIRES: `opts.mountpoint` is a directory of a dataset session that
  // serves requests now (the mount looks it up); `fs` outlives this. `name`
  // ("control", "spill") names the session in the log.
  static Result<std::unique_ptr<NestedMount>> Start(fs::Filesystem& fs, fs::MountOptions opts,
                                                    std::string name);
  ~NestedMount();
  NestedMount(const NestedMount&) = delete;
  NestedMount& operator=(const NestedMount&) = delete;

 private:
  NestedMount() = default;
  std::string name_;
  std::unique_ptr<fs::Session> session_;
  std::string mountpoint_;
  dev_t dev_ = 0;  // the session's device: its connection in /sys/fs/fuse/connections
  std::thread loop_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool ended_ = false;  // guarded by mu_: the loop returned
};

}  // namespace epochfs
