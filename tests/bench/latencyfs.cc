// latencyfs — a latency store for benchmarks: a read-only low-level libfuse 3
// passthrough of SOURCE in which every call waits, as on NFS or an s3 mount,
// without costing the client's machine a thread per waiting call. A
// benchmark fixture (scripts/bench/bench-slow-store), not part of the product;
// tests/integration/faultfs.cc stays the fixture of the fault tests.
//
//   latencyfs SOURCE MOUNTPOINT [-f] [-o allow_other,max_threads=N,slack_us=N,...]
//
// Latency: while SOURCE/.latency_ms holds N (at most 10000), every call it
// serves (lookup, getattr, open, read, opendir, readdir, readlink, statfs,
// access) is answered N ms after it arrived, or up to slack_us (default
// 500) later, never sooner: the answers due within slack_us of the earliest
// are sent together, one wake-up of the timer thread for them all (its cost
// per call falls by as many; latency_queue.h). An error (ENOENT, ...) waits
// too. The file is read again when SOURCE changes (an inotify watch, checked
// by every call): a change is seen by every call that arrives after it.
// Answered at once, neither waiting nor counted: forget, release, releasedir
// (a client's close costs no server round trip) and getxattr (the counts).
//
// Concurrency: unbounded. A call's work (lstat, open, the listing) is done
// when it arrives, by the libfuse loop thread that received it, and its
// answer is put in a timer queue (a min-heap by due time); one timer thread
// sends the answers whose time has come. A read's bytes are spliced from
// the file into the device as its answer is sent (Read). A waiting call
// holds no thread, only its answer (a listing, a stat, a read's descriptor
// and range), so any number of calls wait at once, as at a store with many
// servers: the calls in flight are the client's, up to what the kernel lets
// it send (this mount asks for max_background 4096: reads the kernel sends
// on its own are not held back at its default 12). The loop threads
// (libfuse's `-o max_threads=N`, default 10) bound only the calls being
// worked on at one instant, not those waiting. The store's answers reflect
// SOURCE when the call arrived, but for a read's bytes: those of when it is
// answered.
//
// The kernel caches nothing: entry and attribute timeouts are 0 (every path
// walk revalidates each name with a LOOKUP, every stat is a GETATTR) and
// files are opened with direct_io (every read reaches this process), as in
// faultfs, so the client's calls all reach the store. Lookups in one
// directory run side by side (parallel_dirops, which libfuse 3.14 leaves out
// of its INIT reply: the reply is amended, DeviceWritev below).
//
// Counts (call_counts.h): every call served is counted by kind; the extended attribute
// `user.faultfs.counts` of the mount's root (the same interface as
// faultfs's) reads "lookup=N stat=N open=N read=N opendir=N list=N
// readlink=N statfs=N access=N in_flight=N max_in_flight=N", stat being
// getattr, list a readdir, in_flight the calls waiting now and max_in_flight
// the most at once since the mount; `user.faultfs.counts.PID` gives those
// of process PID's threads only.
//
// Memory: the path of every name ever looked up is kept until unmount (the
// inode table; a benchmark's dataset, not a million-file store), and each
// waiting call's answer until it is sent. Modifying calls are not
// implemented (ENOSYS, EROFS for an open for writing). Thread safety: the
// inode table, the latency, the counts and the queue are each behind their
// own mutex.

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fuse.h>
#include <sys/inotify.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "call_counts.h"
#include "latency_queue.h"

namespace latencyfs {

std::string g_source;  // absolute path of SOURCE ("" for /), set before the loop

// ---------------------------------------------------------------------------
// Inodes: a path (relative to SOURCE, "" for the root) by inode number
// ---------------------------------------------------------------------------

std::mutex g_ino_mu;
std::unordered_map<fuse_ino_t, std::string> g_path{{FUSE_ROOT_ID, ""}};  // g_ino_mu
std::unordered_map<std::string, fuse_ino_t> g_ino{{"", FUSE_ROOT_ID}};   // g_ino_mu
fuse_ino_t g_next_ino = FUSE_ROOT_ID + 1;                                // g_ino_mu

// The real path of inode `ino`; false if unknown.
bool RealPath(fuse_ino_t ino, std::string* out) {
  std::lock_guard lk(g_ino_mu);
  auto it = g_path.find(ino);
  if (it == g_path.end()) return false;
  *out = g_source + it->second;
  return true;
}

// In `rel`, the relative path of name `name` in directory `parent`; false if
// `parent` is unknown.
bool ChildOf(fuse_ino_t parent, const char* name, std::string* rel) {
  std::lock_guard lk(g_ino_mu);
  auto it = g_path.find(parent);
  if (it == g_path.end()) return false;
  *rel = it->second + "/" + name;
  return true;
}

// The inode of relative path `rel`, made if new (never forgotten).
fuse_ino_t InodeOf(const std::string& rel) {
  std::lock_guard lk(g_ino_mu);
  auto [it, made] = g_ino.try_emplace(rel, g_next_ino);
  if (made) g_path.emplace(g_next_ino++, rel);
  return it->second;
}

// ---------------------------------------------------------------------------
// Latency: SOURCE/.latency_ms, read again when SOURCE changes
// ---------------------------------------------------------------------------

int g_watch = -1;  // inotify of SOURCE (non-blocking); -1: read the file every call
std::mutex g_latency_mu;
bool g_latency_read = false;  // g_latency_mu
long g_latency_ms = 0;        // g_latency_mu

long ReadLatency() {
  const int fd = open((g_source + "/.latency_ms").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd == -1) return 0;
  char buf[16] = {};
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  const long ms = std::strtol(buf, nullptr, 10);
  return ms > 0 && ms <= 10000 ? ms : 0;
}

long LatencyMs() {
  if (g_watch < 0) return ReadLatency();
  std::lock_guard lk(g_latency_mu);
  bool changed = !g_latency_read;
  alignas(inotify_event) char events[4096];
  while (read(g_watch, events, sizeof events) > 0) changed = true;  // drained (or EAGAIN)
  if (changed) {
    g_latency_ms = ReadLatency();
    g_latency_read = true;
  }
  return g_latency_ms;
}

// ---------------------------------------------------------------------------
// Answers: counted, and sent when due
// ---------------------------------------------------------------------------

CallCounts g_counts;
TimerQueue* g_queue = nullptr;  // set before the loop, for its lifetime

// Counts call `req` of `kind` and answers it with `f()` once `latency` has
// passed since now (at once when there is none).
template <class F>
void Reply(fuse_req_t req, Kind kind, const std::chrono::milliseconds latency, F f) {
  const pid_t process = g_counts.Begin(kind, fuse_req_ctx(req)->pid);
  auto answer = MakeAnswer([f = std::move(f), process]() mutable {
    // Out of flight before the answer goes: the caller's next call may
    // arrive as soon as it is sent and must not be counted beside it.
    g_counts.End(process);
    f();
  });
  if (latency.count() == 0) return answer->Send();
  g_queue->Push(Clock::now() + latency, std::move(answer));
}

// The call's latency, read once at its arrival.
std::chrono::milliseconds Latency() { return std::chrono::milliseconds(LatencyMs()); }

void AnswerErr(fuse_req_t req, Kind kind, int err) {
  Reply(req, kind, Latency(), [req, err] { fuse_reply_err(req, err); });
}

// ---------------------------------------------------------------------------
// The calls
// ---------------------------------------------------------------------------

void Init(void* /*userdata*/, fuse_conn_info* conn) {
  if (conn->capable & FUSE_CAP_SPLICE_WRITE) conn->want |= FUSE_CAP_SPLICE_WRITE;  // Read
  conn->max_background = 4096;  // the kernel's own reads (readahead, async) not held back
  conn->congestion_threshold = 3072;
}

// Lookups in one directory side by side: libfuse 3.14 wants parallel_dirops
// but does not put it in its INIT reply (the kernel then takes a directory's
// lookups of new names one at a time), so the reply is amended on its way
// out: the device's writes pass through here (fuse_session_custom_io).
std::atomic<bool> g_init_sent{false};

ssize_t DeviceWritev(int fd, iovec* iov, int count, void* /*userdata*/) {
  if (!g_init_sent.load(std::memory_order_relaxed) && count == 2 &&
      iov[0].iov_len == sizeof(fuse_out_header) &&
      iov[1].iov_len >= offsetof(fuse_init_out, max_background)) {
    // The first answer on the device is INIT's (no other call comes before).
    auto* init = static_cast<fuse_init_out*>(iov[1].iov_base);
    if (static_cast<const fuse_out_header*>(iov[0].iov_base)->error == 0 && init->major == 7) {
      init->flags |= FUSE_PARALLEL_DIROPS;
    }
    g_init_sent = true;
  }
  return writev(fd, iov, count);
}

ssize_t DeviceRead(int fd, void* buf, size_t len, void* /*userdata*/) { return read(fd, buf, len); }

// Given, libfuse offers splice to the device (FUSE_CAP_SPLICE_WRITE: Read):
// with custom I/O it does so only when the I/O can splice.
ssize_t DeviceSplice(int fdin, off_t* offin, int fdout, off_t* offout, size_t len, unsigned flags,
                     void* /*userdata*/) {
  return splice(fdin, offin, fdout, offout, len, flags);
}

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  const auto latency = Latency();
  std::string rel;
  if (!ChildOf(parent, name, &rel)) return AnswerErr(req, kLookup, ENOENT);
  fuse_entry_param e{};
  if (lstat((g_source + rel).c_str(), &e.attr) == -1) return AnswerErr(req, kLookup, errno);
  e.ino = InodeOf(rel);
  e.attr.st_ino = e.ino;
  Reply(req, kLookup, latency, [req, e] { fuse_reply_entry(req, &e); });
}

void Forget(fuse_req_t req, fuse_ino_t /*ino*/, uint64_t /*nlookup*/) { fuse_reply_none(req); }

void ForgetMulti(fuse_req_t req, size_t /*count*/, fuse_forget_data* /*forgets*/) {
  fuse_reply_none(req);
}

void Getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  const auto latency = Latency();
  struct stat st {};
  std::string path;
  int rc;
  if (fi != nullptr) {
    rc = fstat(static_cast<int>(fi->fh), &st);
  } else if (!RealPath(ino, &path)) {
    return AnswerErr(req, kStat, ENOENT);
  } else {
    rc = lstat(path.c_str(), &st);
  }
  if (rc == -1) return AnswerErr(req, kStat, errno);
  st.st_ino = ino;
  Reply(req, kStat, latency, [req, st] { fuse_reply_attr(req, &st, 0.0); });
}

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  const auto latency = Latency();
  std::string path;
  if (!RealPath(ino, &path)) return AnswerErr(req, kOpen, ENOENT);
  if ((fi->flags & O_ACCMODE) != O_RDONLY) return AnswerErr(req, kOpen, EROFS);
  const int fd = open(path.c_str(), fi->flags & ~(O_CREAT | O_TRUNC | O_EXCL | O_NOFOLLOW));
  if (fd == -1) return AnswerErr(req, kOpen, errno);
  fuse_file_info out = *fi;
  out.fh = static_cast<uint64_t>(fd);
  out.direct_io = 1;  // every read reaches the store
  out.keep_cache = 0;
  Reply(req, kOpen, latency, [req, out] {
    if (fuse_reply_open(req, &out) != 0) close(static_cast<int>(out.fh));  // interrupted
  });
}

// The bytes are read when the answer is sent, spliced from the file into the
// device (fuse_reply_data with the file's descriptor: libfuse moves the page
// cache's pages through a pipe, and the kernel copies them once, into the
// reader's buffer). A store's bytes cost its client that one copy and nothing
// else; a read into a buffer of ours and a write of it to the device would
// cost this machine a second copy of every byte, the fixture's CPU that a
// remote store does not put on the client. The range is cut at the file's
// end as its size was when the read arrived (a splice that comes up short
// makes libfuse read the range into memory again); under 8 KiB libfuse reads
// into memory and writes that.
void Read(fuse_req_t req, fuse_ino_t /*ino*/, size_t size, off_t off, fuse_file_info* fi) {
  const auto latency = Latency();
  const int fd = static_cast<int>(fi->fh);  // open until the read is answered
  struct stat st {};
  if (fstat(fd, &st) == -1) return AnswerErr(req, kRead, errno);
  const size_t n = off >= st.st_size ? 0 : std::min<size_t>(size, static_cast<size_t>(st.st_size - off));
  Reply(req, kRead, latency, [req, fd, n, off] {
    fuse_bufvec data = FUSE_BUFVEC_INIT(n);
    data.buf[0].flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    data.buf[0].fd = fd;
    data.buf[0].pos = off;
    fuse_reply_data(req, &data, FUSE_BUF_SPLICE_MOVE);
  });
}

void Release(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
  close(static_cast<int>(fi->fh));
  fuse_reply_err(req, 0);
}

struct Listing {  // an open directory: its entries, read whole at opendir
  struct Entry {
    std::string name;
    ino_t ino;
    unsigned char type;
  };
  std::vector<Entry> entries;
};

void Opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  const auto latency = Latency();
  std::string path;
  if (!RealPath(ino, &path)) return AnswerErr(req, kOpendir, ENOENT);
  DIR* dir = opendir(path.empty() ? "/" : path.c_str());
  if (dir == nullptr) return AnswerErr(req, kOpendir, errno);
  auto listing = std::make_unique<Listing>();
  while (dirent* de = readdir(dir)) listing->entries.push_back({de->d_name, de->d_ino, de->d_type});
  closedir(dir);
  fuse_file_info out = *fi;
  out.fh = reinterpret_cast<uint64_t>(listing.release());
  Reply(req, kOpendir, latency, [req, out] {
    if (fuse_reply_open(req, &out) != 0) delete reinterpret_cast<Listing*>(out.fh);
  });
}

void Readdir(fuse_req_t req, fuse_ino_t /*ino*/, size_t size, off_t off, fuse_file_info* fi) {
  const auto latency = Latency();
  const auto* listing = reinterpret_cast<const Listing*>(fi->fh);
  std::string buf(size, '\0');
  size_t used = 0;
  for (size_t i = static_cast<size_t>(std::max<off_t>(off, 0)); i < listing->entries.size(); ++i) {
    const Listing::Entry& e = listing->entries[i];
    struct stat st {};
    st.st_ino = e.ino;
    st.st_mode = static_cast<mode_t>(e.type) << 12;
    const size_t need = fuse_add_direntry(req, buf.data() + used, size - used, e.name.c_str(), &st,
                                          static_cast<off_t>(i + 1));
    if (need > size - used) break;
    used += need;
  }
  buf.resize(used);
  Reply(req, kList, latency, [req, buf = std::move(buf)] {
    fuse_reply_buf(req, buf.data(), buf.size());
  });
}

void Releasedir(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
  delete reinterpret_cast<Listing*>(fi->fh);
  fuse_reply_err(req, 0);
}

void Readlink(fuse_req_t req, fuse_ino_t ino) {
  const auto latency = Latency();
  std::string path;
  if (!RealPath(ino, &path)) return AnswerErr(req, kReadlink, ENOENT);
  char buf[PATH_MAX];
  const ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
  if (n == -1) return AnswerErr(req, kReadlink, errno);
  Reply(req, kReadlink, latency, [req, target = std::string(buf, static_cast<size_t>(n))] {
    fuse_reply_readlink(req, target.c_str());
  });
}

void Statfs(fuse_req_t req, fuse_ino_t /*ino*/) {
  const auto latency = Latency();
  struct statvfs st {};
  if (statvfs(g_source.empty() ? "/" : g_source.c_str(), &st) == -1) {
    return AnswerErr(req, kStatfs, errno);
  }
  Reply(req, kStatfs, latency, [req, st] { fuse_reply_statfs(req, &st); });
}

void Access(fuse_req_t req, fuse_ino_t ino, int mask) {
  const auto latency = Latency();
  std::string path;
  if (!RealPath(ino, &path)) return AnswerErr(req, kAccess, ENOENT);
  const int err = access(path.empty() ? "/" : path.c_str(), mask) == -1 ? errno : 0;
  Reply(req, kAccess, latency, [req, err] { fuse_reply_err(req, err); });
}

// The counts, as described at the top; not a call of the store's.
void Getxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  constexpr char kCounts[] = "user.faultfs.counts";
  if (ino != FUSE_ROOT_ID || std::strncmp(name, kCounts, sizeof kCounts - 1) != 0) {
    return (void)fuse_reply_err(req, ENODATA);
  }
  std::optional<pid_t> process;
  if (name[sizeof kCounts - 1] == '.') {
    process = static_cast<pid_t>(std::strtol(name + sizeof kCounts, nullptr, 10));
  } else if (name[sizeof kCounts - 1] != '\0') {
    return (void)fuse_reply_err(req, ENODATA);
  }
  const std::string text = g_counts.Text(process);
  if (size == 0) return (void)fuse_reply_xattr(req, text.size());
  if (size < text.size()) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, text.data(), text.size());
}

}  // namespace latencyfs

int main(int argc, char* argv[]) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: latencyfs SOURCE MOUNTPOINT [-f] [-o OPTIONS]\n");
    return 2;
  }
  char resolved[PATH_MAX];
  if (realpath(argv[1], resolved) == nullptr) {
    std::fprintf(stderr, "latencyfs: %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  latencyfs::g_source = std::strcmp(resolved, "/") == 0 ? "" : resolved;
  latencyfs::g_watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (latencyfs::g_watch >= 0 &&
      inotify_add_watch(latencyfs::g_watch, resolved,
                        IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM |
                            IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
    close(latencyfs::g_watch);
    latencyfs::g_watch = -1;
  }

  // SOURCE dropped from argv; libfuse parses the rest (MOUNTPOINT, -f, -o ...).
  std::vector<char*> argl{argv[0]};
  for (int i = 2; i < argc; ++i) argl.push_back(argv[i]);
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argl.size()), argl.data());
  struct Options {
    unsigned slack_us = 500;
  } own;
  const fuse_opt own_spec[] = {{"slack_us=%u", offsetof(Options, slack_us), 0}, FUSE_OPT_END};
  if (fuse_opt_parse(&args, &own, own_spec, nullptr) != 0) return 2;
  latencyfs::TimerQueue queue{std::chrono::microseconds(own.slack_us)};
  latencyfs::g_queue = &queue;
  fuse_cmdline_opts opts{};
  if (fuse_parse_cmdline(&args, &opts) != 0 || opts.mountpoint == nullptr) {
    std::fprintf(stderr, "usage: latencyfs SOURCE MOUNTPOINT [-f] [-o OPTIONS]\n");
    return 2;
  }

  fuse_lowlevel_ops ops{};
  ops.init = latencyfs::Init;
  ops.lookup = latencyfs::Lookup;
  ops.forget = latencyfs::Forget;
  ops.forget_multi = latencyfs::ForgetMulti;
  ops.getattr = latencyfs::Getattr;
  ops.open = latencyfs::Open;
  ops.read = latencyfs::Read;
  ops.release = latencyfs::Release;
  ops.opendir = latencyfs::Opendir;
  ops.readdir = latencyfs::Readdir;
  ops.releasedir = latencyfs::Releasedir;
  ops.readlink = latencyfs::Readlink;
  ops.statfs = latencyfs::Statfs;
  ops.access = latencyfs::Access;
  ops.getxattr = latencyfs::Getxattr;

  int rc = 1;
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, nullptr);
  if (se != nullptr && fuse_set_signal_handlers(se) == 0) {
    const fuse_custom_io io{latencyfs::DeviceWritev, latencyfs::DeviceRead, nullptr,
                             latencyfs::DeviceSplice};
    if (fuse_session_mount(se, opts.mountpoint) == 0) {
      if (fuse_session_custom_io(se, &io, fuse_session_fd(se)) != 0) fuse_session_exit(se);
      fuse_daemonize(opts.foreground);
      std::thread timer([&queue] { queue.Run(); });
      fuse_loop_config* cfg = fuse_loop_cfg_create();
      // libfuse's defaults unless -o max_threads / max_idle_threads (UINT_MAX: not given)
      if (opts.max_threads != UINT_MAX) fuse_loop_cfg_set_max_threads(cfg, opts.max_threads);
      if (opts.max_idle_threads != UINT_MAX) {
        fuse_loop_cfg_set_idle_threads(cfg, opts.max_idle_threads);
      }
      rc = fuse_session_loop_mt(se, cfg) == 0 ? 0 : 1;
      fuse_loop_cfg_destroy(cfg);
      queue.Stop();  // what still waits is answered now
      timer.join();
      fuse_session_unmount(se);
    }
    fuse_remove_signal_handlers(se);
  }
  if (se != nullptr) fuse_session_destroy(se);
  fuse_opt_free_args(&args);
  free(opts.mountpoint);
  return rc;
}
