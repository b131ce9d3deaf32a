#include "background.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace epochfs {
namespace {

constexpr char kReady[] = "ready";

void ToDevNull() {
  int fd = ::open("/dev/null", O_RDWR);
  if (fd < 0) return;
  ::dup2(fd, STDIN_FILENO);
  ::dup2(fd, STDOUT_FILENO);
  ::dup2(fd, STDERR_FILENO);
  if (fd > STDERR_FILENO) ::close(fd);
}

[[noreturn]] void WaitForChild(int fd) {
  std::string msg;
  char buf[1024];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      msg.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  if (msg == kReady) ::_exit(0);
  if (msg.empty()) msg = "the daemon ended before the mount was ready";
  std::fprintf(stderr, "epochfs: %s\n", msg.c_str());
  ::_exit(1);
}

}  // namespace

Status Background::Start(Background* out) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return ErrnoStatus(Code::kInternal, errno, "pipe");
  pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(p[0]);
    ::close(p[1]);
    return ErrnoStatus(Code::kInternal, e, "fork");
  }
  if (pid > 0) {
    ::close(p[1]);
    WaitForChild(p[0]);
  }
  ::close(p[0]);
  ::setsid();
  if (::chdir("/") != 0) {
    // "/" always exists; nothing to do.
  }
  ToDevNull();
  out->fd_.store(p[1]);
  return Status::Ok();
}

Background::~Background() {
  if (fd_.load() >= 0) Failed("the daemon ended before the mount was ready");
}

void Background::Ready() { Report(kReady); }

void Background::Failed(const std::string& why) {
  Report(why.empty() || why == kReady ? "mount failed" : why);
}

void Background::Report(const std::string& msg) {
  int fd = fd_.exchange(-1);
  if (fd < 0) return;
  size_t off = 0;
  while (off < msg.size()) {
    ssize_t n = ::write(fd, msg.data() + off, msg.size() - off);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  ::close(fd);
}

}  // namespace epochfs
