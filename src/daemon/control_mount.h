// ControlMount: the control directory as a FUSE session of its own
// (fuse.no_open; fs/filesystem.h, Role).
//
// The dataset session answers OPEN and FLUSH with ENOSYS, which the kernel
// takes for the whole connection; control files need both (a control write is
// taken when its writer closes it). So `.epochfs` is mounted again, on itself:
// a second session, rooted at the control directory, on the dataset session's
// (empty) `.epochfs` directory. Mounting needs CAP_SYS_ADMIN (a mount inside a
// FUSE mount); the daemon refuses fuse.no_open without it.
//
// Start mounts and serves on a thread of its own; the destructor unmounts
// (lazily: `umount -R MOUNTPOINT` unmounts both, a plain unmount of MOUNTPOINT
// is refused by the kernel while this one is on it) and waits for the thread.
// Errors: Start returns the mount's error (Session::Mount).
// Thread safety: one thread owns a ControlMount.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "epochfs/common/status.h"
#include "epochfs/fs/session.h"

namespace epochfs {

class ControlMount {
 public:
  // REQUIRES: `opts.mountpoint` is MOUNTPOINT/.epochfs of a dataset session
  // that serves requests now (the mount looks it up); `fs` outlives this.
  static Result<std::unique_ptr<ControlMount>> Start(fs::Filesystem& fs, fs::MountOptions opts);
  ~ControlMount();
  ControlMount(const ControlMount&) = delete;
  ControlMount& operator=(const ControlMount&) = delete;

 private:
  ControlMount() = default;
  std::unique_ptr<fs::Session> session_;
  std::string mountpoint_;
  dev_t dev_ = 0;  // the session's device: its connection in /sys/fs/fuse/connections
  std::thread loop_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool ended_ = false;  // guarded by mu_: the loop returned
};

}  // namespace epochfs
