#include "unmount_watcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/close_range.h>

#include <cerrno>
#include <cstring>

#include "epochfs/daemon/daemon.h"
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

// The process's own name (comm is 15 bytes at most): `pgrep -x epochfs`
// and `killall epochfs` never take it for the daemon.
constexpr char kComm[] = "epochfs-unmount";

[[noreturn]] void Watch(int fd, const std::string& mountpoint, const std::string& id) {
  (void)::prctl(PR_SET_NAME, kComm, 0, 0, 0);
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

int UnmountWatcherMain(int argc, char** argv) {
  // Only as StartUnmountWatcher runs it: fd 3 the read end of its pipe.
  struct stat st {};
  if (argc != 3 || ::fstat(3, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    static const char msg[] =
        "epochfs-unmount-watcher: started by epochfs -o auto_unmount only\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    return 2;
  }
  Watch(3, argv[1], argv[2]);
}

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
    // Its own argv too (`ps`, `pgrep -f`): the daemon's image again, as
    // epochfs-unmount-watcher MOUNTPOINT ID (UnmountWatcherMain). Should the
    // exec fail, it watches as it is.
    const char* argv[] = {kUnmountWatcherName, mountpoint.c_str(), id.c_str(), nullptr};
    ::execv("/proc/self/exe", const_cast<char* const*>(argv));
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
