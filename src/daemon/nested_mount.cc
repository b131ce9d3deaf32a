#include "nested_mount.h"

#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <chrono>
#include <cstring>
#include <fstream>

#include "epochfs/common/log.h"

namespace epochfs {
namespace {

constexpr const char* kFuseConnections = "/sys/fs/fuse/connections";

// Ends a FUSE connection that still has users after its unmount (a process
// holds a control file open): its `abort` file in fusectl, mounted if it is
// not. Best effort.
void AbortConnection(dev_t dev) {
  const std::string abort_file =
      std::string(kFuseConnections) + "/" + std::to_string(minor(dev)) + "/abort";
  struct stat st;
  if (::stat(abort_file.c_str(), &st) != 0) {
    ::mount("fusectl", kFuseConnections, "fusectl", 0, nullptr);
  }
  std::ofstream out(abort_file);
  out << "1";
}

}  // namespace

Result<std::unique_ptr<NestedMount>> NestedMount::Start(fs::Filesystem& fs, fs::MountOptions opts,
                                                        std::string name) {
  opts.signal_handlers = false;  // the dataset session's
  opts.read_ahead_kb = 0;        // control and spill reads are direct
  std::unique_ptr<NestedMount> cm(new NestedMount());
  cm->name_ = std::move(name);
  cm->mountpoint_ = opts.mountpoint;
  auto session = fs::Session::Mount(fs, opts);
  if (!session.ok()) return session.status();
  cm->session_ = std::move(session).value();
  NestedMount* self = cm.get();
  cm->loop_ = std::thread([self] {
    // Signals are the dataset session's: its loop ends at SIGTERM.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    Status s = self->session_->Run();
    if (!s.ok()) log::Error(self->name_ + " session: " + s.message());
    std::lock_guard lock(self->mu_);
    self->ended_ = true;
    self->cv_.notify_all();
  });
  // After the loop started: the stat waits for the session's INIT.
  struct stat st;
  if (::stat(cm->mountpoint_.c_str(), &st) == 0) cm->dev_ = st.st_dev;
  return cm;
}

NestedMount::~NestedMount() {
  if (loop_.joinable()) {
    // Unmounted, the session ends once no process holds one of its files.
    ::umount2(mountpoint_.c_str(), MNT_DETACH);
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(2), [this] { return ended_; })) {
      lock.unlock();
      if (dev_ != 0) AbortConnection(dev_);
      lock.lock();
      if (!cv_.wait_for(lock, std::chrono::seconds(10), [this] { return ended_; })) {
        // Still serving: leave it to the process's end rather than free what
        // its threads use.
        log::Warn(name_ + " session did not end; left to the process's exit");
        lock.unlock();
        loop_.detach();
        (void)session_.release();
        return;
      }
    }
    lock.unlock();
    loop_.join();
  }
}

}  // namespace epochfs
