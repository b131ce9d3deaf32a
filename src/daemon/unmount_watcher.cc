#include "unmount_watcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/close_range.h>

#include <cerrno>
#include <cstring>

#include "mount_point.h"

namespace epochfs {
namespace {

// The id of the topmost FUSE mount on `mountpoint` (fuse.epochfs, or the
// subtype the user chose), or "" (none, or another filesystem over it).
std::string TopMountId(const std::string& mountpoint) {
  std::string id;
  for (const MountEntry& e : ReadMountInfo()) {  // in mount order: the last one is on top
    if (e.mount_point == mountpoint) id = e.fstype.rfind("fuse", 0) == 0 ? e.id : "";
  }
  return id;
}

[[noreturn]] void Watch(int fd, const std::string& mountpoint, const std::string& id) {
  char c;
  while (::read(fd, &c, 1) != 0) {
    if (errno != EINTR) break;
  }
  // The daemon is gone (every copy of the write end closed).
  if (TopMountId(mountpoint) == id) {
    if (::geteuid() == 0) {
      (void)::umount2(mountpoint.c_str(), MNT_DETACH);
    } else {
      execlp("fusermount3", "fusermount3", "-u", "-z", "-q", "--", mountpoint.c_str(),
             static_cast<char*>(nullptr));
    }
  }
  _exit(0);
}

}  // namespace

Status StartUnmountWatcher(const std::string& mountpoint) {
  const std::string id = TopMountId(mountpoint);
  if (id.empty()) return IoError("auto_unmount: " + mountpoint + " is not in mountinfo");
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    return ErrnoStatus(Code::kIoError, errno, "auto_unmount: pipe");
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(p[0]);
    ::close(p[1]);
    return ErrnoStatus(Code::kIoError, errno, "auto_unmount: fork");
  }
  if (pid == 0) {
    // A grandchild, so that the daemon never has to reap it.
    if (::fork() != 0) _exit(0);
    ::setsid();
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(sig, SIG_IGN);
    if (::chdir("/") != 0) _exit(0);
    // Only the pipe's read end, as fd 3, and /dev/null as 0, 1, 2: no copy of
    // /dev/fuse (it would keep the dead mount's connection open) and no
    // terminal or pipe of the caller's (a reader of its stderr would wait
    // for this process).
    if (::dup2(p[0], 3) != 3) _exit(0);
    const int null = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) (void)::dup2(null, fd);
    ::close_range(4, ~0U, 0);
    Watch(3, mountpoint, id);
  }
  ::close(p[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // The write end stays open, without a name, until the daemon ends.
  return Status::Ok();
}

}  // namespace epochfs
