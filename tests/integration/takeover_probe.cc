// takeover_probe — a test fixture, not part of the product: can a second
// process take over a live FUSE connection with libfuse 3.14, which has no
// API for a session that starts after INIT? (docs/restart.md)
//
//   takeover_probe old MOUNTPOINT SOCKET
//     mounts MOUNTPOINT with one file "f" (kFileSize bytes of a fixed
//     pattern, opened with direct_io so that every read reaches a daemon) and
//     serves it from a single thread; when a process connects to the unix
//     socket SOCKET (0600) it reads nothing more from /dev/fuse (everything
//     it read is answered: one thread, synchronous replies), sends the
//     /dev/fuse descriptor (SCM_RIGHTS) and what the kernel's INIT told it,
//     waits for the receiver's byte and exits without unmounting.
//   takeover_probe new SOCKET [--no-init]
//     receives the descriptor, prints "received", waits for a line on stdin,
//     builds a session on it (fuse_session_mount on "/dev/fd/N"), completes
//     libfuse's INIT state with a synthetic FUSE_INIT carrying the kernel's
//     flags (the reply's write is refused by the kernel with ENOENT, which
//     libfuse ignores), prints "serving", and serves until unmounted; then
//     prints "served N reads". With --no-init it skips the synthetic INIT
//     (what libfuse does with a session that never saw one: EIO to all).
//
// Each daemon prints its reads served to stderr; the test reads them.

#define FUSE_USE_VERSION 34

#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace takeover_probe {

constexpr off_t kFileSize = 8 << 20;
constexpr fuse_ino_t kFileIno = 2;

unsigned long g_reads = 0;
fuse_conn_info g_conn{};  // what the kernel's INIT told this daemon

// What the old daemon hands over beside the descriptor.
struct Handover {
  uint32_t major, minor, max_readahead, capable;
};

void Fill(char* b, off_t off, size_t n) {
  for (size_t i = 0; i < n; i++) b[i] = static_cast<char>(((off + i) * 131 + 7) >> 3);
}

void Init(void*, fuse_conn_info* c) { g_conn = *c; }

void StatOf(fuse_ino_t ino, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = ino;
  if (ino == FUSE_ROOT_ID) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
  } else {
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = kFileSize;
  }
}

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  if (parent != FUSE_ROOT_ID || std::strcmp(name, "f") != 0) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  fuse_entry_param e{};
  e.ino = kFileIno;
  e.generation = 1;
  StatOf(kFileIno, &e.attr);
  fuse_reply_entry(req, &e);
}

void Getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  struct stat st;
  StatOf(ino, &st);
  fuse_reply_attr(req, &st, 0);
}

void Open(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  fi->direct_io = 1;
  fuse_reply_open(req, fi);
}

void Read(fuse_req_t req, fuse_ino_t, size_t n, off_t off, fuse_file_info*) {
  static std::vector<char> buf;
  if (off >= kFileSize) {
    fuse_reply_buf(req, nullptr, 0);
    return;
  }
  n = std::min<size_t>(n, static_cast<size_t>(kFileSize - off));
  buf.resize(n);
  Fill(buf.data(), off, n);
  g_reads++;
  fuse_reply_buf(req, buf.data(), n);
}

fuse_lowlevel_ops Ops() {
  fuse_lowlevel_ops ops{};
  ops.init = Init;
  ops.lookup = Lookup;
  ops.getattr = Getattr;
  ops.open = Open;
  ops.read = Read;
  return ops;
}

fuse_session* NewSession(const fuse_lowlevel_ops& ops) {
  std::string a0 = "takeover_probe", a1 = "-o", a2 = "fsname=takeover_probe,subtype=probe";
  char* argv[] = {a0.data(), a1.data(), a2.data(), nullptr};
  fuse_args args = FUSE_ARGS_INIT(3, argv);
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, nullptr);
  fuse_opt_free_args(&args);
  return se;
}

sockaddr_un Address(const char* path) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  return sa;
}

// The kernel's INIT flags, rebuilt from the capabilities libfuse kept of
// them (the reverse of libfuse 3.14's do_init).
uint64_t KernelFlags(const Handover& h) {
  static constexpr std::pair<uint32_t, uint64_t> kMap[] = {
      {FUSE_CAP_ASYNC_READ, FUSE_ASYNC_READ},
      {FUSE_CAP_POSIX_LOCKS, FUSE_POSIX_LOCKS},
      {FUSE_CAP_ATOMIC_O_TRUNC, FUSE_ATOMIC_O_TRUNC},
      {FUSE_CAP_EXPORT_SUPPORT, FUSE_EXPORT_SUPPORT},
      {FUSE_CAP_DONT_MASK, FUSE_DONT_MASK},
      {FUSE_CAP_FLOCK_LOCKS, FUSE_FLOCK_LOCKS},
      {FUSE_CAP_AUTO_INVAL_DATA, FUSE_AUTO_INVAL_DATA},
      {FUSE_CAP_READDIRPLUS, FUSE_DO_READDIRPLUS},
      {FUSE_CAP_READDIRPLUS_AUTO, FUSE_READDIRPLUS_AUTO},
      {FUSE_CAP_ASYNC_DIO, FUSE_ASYNC_DIO},
      {FUSE_CAP_WRITEBACK_CACHE, FUSE_WRITEBACK_CACHE},
      {FUSE_CAP_NO_OPEN_SUPPORT, FUSE_NO_OPEN_SUPPORT},
      {FUSE_CAP_PARALLEL_DIROPS, FUSE_PARALLEL_DIROPS},
      {FUSE_CAP_POSIX_ACL, FUSE_POSIX_ACL},
      {FUSE_CAP_HANDLE_KILLPRIV, FUSE_HANDLE_KILLPRIV},
      {FUSE_CAP_CACHE_SYMLINKS, FUSE_CACHE_SYMLINKS},
      {FUSE_CAP_NO_OPENDIR_SUPPORT, FUSE_NO_OPENDIR_SUPPORT},
      {FUSE_CAP_EXPLICIT_INVAL_DATA, FUSE_EXPLICIT_INVAL_DATA},
  };
  uint64_t f = 0;
  for (const auto& [cap, flag] : kMap) {
    if ((h.capable & cap) != 0) f |= flag;
  }
  // Not kept in `capable`: every kernel of protocol 7.28 and later sends
  // FUSE_MAX_PAGES (without it libfuse would shrink its read buffer below
  // the requests the kernel may send), 7.36 and later FUSE_INIT_EXT.
  if (h.minor >= 28) f |= FUSE_MAX_PAGES;
  if (h.minor >= 36) f |= FUSE_INIT_EXT;
  return f;
}

int Old(const char* mountpoint, const char* socket_path) {
  fuse_lowlevel_ops ops = Ops();
  fuse_session* se = NewSession(ops);
  if (se == nullptr || fuse_session_mount(se, mountpoint) != 0) return 1;
  int ls = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa = Address(socket_path);
  ::umask(077);
  if (ls < 0 || ::bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(ls, 1) != 0) {
    std::perror("socket");
    return 1;
  }
  int fd = fuse_session_fd(se);
  fuse_buf fb{};
  for (;;) {
    pollfd p[2] = {{fd, POLLIN, 0}, {ls, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) continue;
    if (p[1].revents != 0) break;  // the takeover: read nothing more
    int n = fuse_session_receive_buf(se, &fb);
    if (n == -EINTR || n == -EAGAIN) continue;
    if (n <= 0) return 1;  // unmounted before any takeover
    fuse_session_process_buf(se, &fb);
  }
  int c = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
  Handover h{g_conn.proto_major, g_conn.proto_minor, g_conn.max_readahead, g_conn.capable};
  alignas(cmsghdr) char cm[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{&h, sizeof h};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = cm;
  m.msg_controllen = sizeof cm;
  cmsghdr* ch = CMSG_FIRSTHDR(&m);
  ch->cmsg_level = SOL_SOCKET;
  ch->cmsg_type = SCM_RIGHTS;
  ch->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(ch), &fd, sizeof fd);
  if (c < 0 || ::sendmsg(c, &m, 0) != static_cast<ssize_t>(sizeof h)) {
    std::perror("sendmsg");
    return 1;
  }
  char ack;
  if (::read(c, &ack, 1) != 1) return 1;
  std::fprintf(stderr, "old: handed over after %lu reads (protocol 7.%u)\n", g_reads,
               g_conn.proto_minor);
  ::_exit(0);  // no unmount, no DESTROY: the connection is the new daemon's
}

int New(const char* socket_path, bool synthetic_init) {
  int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa = Address(socket_path);
  if (c < 0 || ::connect(c, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    std::perror("connect");
    return 1;
  }
  Handover h{};
  alignas(cmsghdr) char cm[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{&h, sizeof h};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = cm;
  m.msg_controllen = sizeof cm;
  cmsghdr* ch = nullptr;
  if (::recvmsg(c, &m, MSG_CMSG_CLOEXEC) != static_cast<ssize_t>(sizeof h) ||
      (ch = CMSG_FIRSTHDR(&m)) == nullptr || ch->cmsg_type != SCM_RIGHTS) {
    std::perror("recvmsg");
    return 1;
  }
  int fd;
  std::memcpy(&fd, CMSG_DATA(ch), sizeof fd);
  if (::write(c, "k", 1) != 1) return 1;
  std::fprintf(stderr, "received\n");
  char line[16];
  if (std::fgets(line, sizeof line, stdin) == nullptr) return 1;

  auto t0 = std::chrono::steady_clock::now();
  fuse_lowlevel_ops ops = Ops();
  fuse_session* se = NewSession(ops);
  std::string dev = "/dev/fd/" + std::to_string(fd);
  if (se == nullptr || fuse_session_mount(se, dev.c_str()) != 0) return 1;
  struct {
    fuse_in_header ih;
    fuse_init_in ii;
  } msg{};
  msg.ih.len = sizeof msg;
  msg.ih.opcode = FUSE_INIT;
  msg.ih.unique = (uint64_t{1} << 62) | 1;  // no request of the kernel's: its reply gets ENOENT
  msg.ii.major = h.major;
  msg.ii.minor = h.minor;
  msg.ii.max_readahead = h.max_readahead;
  uint64_t flags = KernelFlags(h);
  msg.ii.flags = static_cast<uint32_t>(flags);
  msg.ii.flags2 = static_cast<uint32_t>(flags >> 32);
  fuse_buf fb{};
  fb.size = sizeof msg;
  fb.mem = &msg;
  if (synthetic_init) fuse_session_process_buf(se, &fb);
  if (synthetic_init && (fuse_session_exited(se) != 0 || g_conn.capable != h.capable)) {
    std::fprintf(stderr, "new: the synthetic INIT was refused\n");
    return 1;
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "serving (session built in %.3f ms)\n", ms);
  fuse_buf rb{};
  for (;;) {
    int n = fuse_session_receive_buf(se, &rb);
    if (n == -EINTR || n == -EAGAIN) continue;
    if (n <= 0) break;
    fuse_session_process_buf(se, &rb);
  }
  std::fprintf(stderr, "served %lu reads\n", g_reads);
  std::free(rb.mem);  // the session's buffer and the session: nothing left to a leak checker
  fuse_session_destroy(se);
  return 0;
}

}  // namespace takeover_probe

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "old" && argc == 4) return takeover_probe::Old(argv[2], argv[3]);
  if (mode == "new" && argc == 3) return takeover_probe::New(argv[2], true);
  if (mode == "new" && argc == 4 && std::string(argv[3]) == "--no-init") {
    return takeover_probe::New(argv[2], false);
  }
  std::fprintf(stderr, "usage: takeover_probe old MOUNTPOINT SOCKET | new SOCKET [--no-init]\n");
  return 2;
}
