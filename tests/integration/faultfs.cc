// faultfs — a fault-injecting, read-only passthrough FUSE filesystem used as
// epochfs' LOWER in integration tests (test fixture, not part of the product).
//
//   faultfs SOURCE MOUNTPOINT [libfuse options, e.g. -f -o allow_other]
//
// Mirrors SOURCE at MOUNTPOINT. Every read(2) of a regular file whose name
// (last path component) contains "EIO" fails with EIO; open, stat and listing
// of that file still succeed, so the failure shows up on the data path exactly
// like a bad disk sector or a flaky network filesystem would. A read of a
// file whose name contains "HANG" blocks while SOURCE/.hang exists (a hung
// NFS server, on command: remove .hang to let it answer). While SOURCE/.delay_ms
// holds a number N, every read of a regular file at offset 0 first sleeps N ms
// (a high-latency store: an object store's time to first byte). While
// SOURCE/.delay_us_per_kib holds a number M, every read of a regular file
// then sleeps M microseconds per KiB it returns (a store of bounded
// bandwidth: a file's time grows with its size by far more than a loaded
// machine's scheduling noise, so that a fit of durations on sizes finds the
// size's part). A stat
// (getattr by path) of a file whose name contains "STATHANG" blocks while
// SOURCE/.hang exists, as a lookup on a hung NFS server; so does a stat of
// the root while SOURCE/.hang_root exists, and an open of a *HANG* file while
// SOURCE/.hang_open exists (a load held before its first read).
//
// A store where every call pays (NFS, an s3 mount), on command:
//   - SOURCE/.latency_ms holds N: every call (stat, which is also how a
//     lookup reaches this high-level fixture; open, read, listing, readlink,
//     statfs, access) first sleeps N ms (at most 10 s). Calls are served at
//     once, as many as libfuse runs threads for (`-o max_threads=N`);
//   - SOURCE/.hang_all exists: every call blocks until it is removed;
//   - SOURCE/.fail_all exists: every call fails with EIO.
// Calls are served side by side, but for one limit (the kernel's, as this
// fixture negotiates the protocol): the lookups of names the kernel does not
// know yet (a first lookup, not a revalidation) in one directory go one at a
// time. A test or benchmark that wants a store answering every call side by
// side looks its paths up once before (SOURCE/.latency_ms empty).
// Every call is counted by kind; the counts are read, without being counted,
// as the extended attribute `user.faultfs.counts` of the mount's root:
// "stat=N open=N read=N list=N readlink=N statfs=N access=N max_in_flight=N",
// max_in_flight being the most calls (of any kind) served at once since the
// mount: how many requests a client kept in flight;
// `user.faultfs.counts.PID` gives those of process PID's threads only (a test
// counts its daemon's calls, not those of another process walking the mount).
// Everything else is a plain passthrough. Modifying operations fail (EROFS,
// or ENOSYS from the kernel); tests change SOURCE directly instead. But while
// SOURCE/.writable exists, create, write, truncate, mkdir, unlink, rename and
// fsync pass through too (counted as `write`, failed and hung as above): a
// directory for a daemon's files (the disk tier's cache directory) on a disk
// that fails or stops answering on command.
//
// Files are opened with direct_io so that every read reaches this process and
// the kernel page cache of the faultfs mount never hides a fault; while
// SOURCE/.page_cache exists they are opened with keep_cache instead (the
// kernel's page cache of the mount serves repeated reads: a benchmark's
// page-cache baseline over a slow store).
//
// The control files (.latency_ms, .fail_all, .hang_all, .writable, ...) are
// read again only when SOURCE changes (an inotify watch: a change is seen by
// every call that starts after it), and each thread's process is looked up
// in /proc once: a call costs the fixture its own work and its wait, not
// a dozen system calls of bookkeeping (a benchmark's store runs on the same
// cores as the daemon it measures).
//
// Uses the high-level libfuse 3 API; single-threaded loop is not forced, so
// every callback is reentrant (the shared state, the counts, the control
// files' state and the threads' processes, is behind atomics and mutexes).

#define FUSE_USE_VERSION 31

#include <fuse.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

std::string g_source;  // absolute path of SOURCE, set once before fuse_main

std::string Real(const char* path) { return g_source + path; }

bool NameHas(const char* path, const char* what) {
  const char* base = std::strrchr(path, '/');
  base = base ? base + 1 : path;
  return std::strstr(base, what) != nullptr;
}

bool IsFaulty(const char* path) { return NameHas(path, "EIO"); }

enum Kind { kStat, kOpen, kRead, kList, kReadlink, kStatfs, kAccess, kWrite, kKinds };
const char* const kKindNames[kKinds] = {"stat",   "open",   "read",  "list",
                                        "readlink", "statfs", "access", "write"};
std::atomic<uint64_t> g_calls[kKinds];
std::atomic<uint64_t> g_in_flight{0};      // calls being served now
std::atomic<uint64_t> g_max_in_flight{0};  // the most at once, ever
struct Tally {  // one process's calls
  std::array<uint64_t, kKinds> calls{};
  uint64_t in_flight = 0, max_in_flight = 0;
};
std::mutex g_by_process_mu;
std::map<pid_t, Tally> g_by_process;  // by thread group

// The thread group (process) of thread `tid`, from /proc; `tid` if unknown.
pid_t ReadProcessOf(pid_t tid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(tid) + "/status").c_str(), "r");
  if (f == nullptr) return tid;
  char line[256];
  pid_t tgid = tid;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "Tgid:", 5) == 0) {
      tgid = static_cast<pid_t>(std::strtol(line + 5, nullptr, 10));
      break;
    }
  }
  std::fclose(f);
  return tgid;
}

// ReadProcessOf, remembered: a thread's process does not change, and /proc
// costs a file opened and read at every call (a thread number reused by
// another process while the mount lives would be counted as its old one's).
std::mutex g_process_of_mu;
std::unordered_map<pid_t, pid_t> g_process_of;  // guarded by g_process_of_mu

pid_t ProcessOf(pid_t tid) {
  {
    std::lock_guard lk(g_process_of_mu);
    if (auto it = g_process_of.find(tid); it != g_process_of.end()) return it->second;
  }
  const pid_t process = ReadProcessOf(tid);
  std::lock_guard lk(g_process_of_mu);
  if (g_process_of.size() >= 65536) g_process_of.clear();  // a bound
  g_process_of[tid] = process;
  return process;
}

bool Exists(const char* flag) { return access((g_source + flag).c_str(), F_OK) == 0; }

// The milliseconds SOURCE/NAME holds (0 if none; at most 10 s).
long MillisIn(const char* name) {
  const std::string file = g_source + name;
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd == -1) return 0;
  char buf[16] = {};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  const long ms = std::strtol(buf, nullptr, 10);
  return ms > 0 && ms <= 10000 ? ms : 0;
}

// The control files every call looks at, as they are now. Read again only
// when SOURCE (not its subdirectories) has changed since they were last
// read: an inotify watch of SOURCE, whose events the kernel queues before
// the change's system call returns, so a call that starts after a test made
// its change sees it (as when each call looked at the files itself, which
// cost five system calls and path walks a call).
struct Flags {
  bool fail_all = false, hang_all = false, writable = false, page_cache = false;
  long latency_ms = 0, delay_ms = 0, delay_us_per_kib = 0;
};

Flags ReadFlags() {
  Flags f;
  f.fail_all = Exists("/.fail_all");
  f.hang_all = Exists("/.hang_all");
  f.writable = Exists("/.writable");
  f.page_cache = Exists("/.page_cache");
  f.latency_ms = MillisIn("/.latency_ms");
  f.delay_ms = MillisIn("/.delay_ms");
  f.delay_us_per_kib = MillisIn("/.delay_us_per_kib");
  return f;
}

int g_watch = -1;  // the inotify descriptor (non-blocking), set before fuse_main; -1: none
std::mutex g_flags_mu;
Flags g_flags;       // guarded by g_flags_mu
bool g_read = false; // guarded by g_flags_mu: g_flags was read once

Flags CurrentFlags() {
  if (g_watch < 0) return ReadFlags();
  std::lock_guard lk(g_flags_mu);
  bool changed = !g_read;
  alignas(inotify_event) char events[4096];
  while (read(g_watch, events, sizeof events) > 0) changed = true;  // drained (or EAGAIN)
  if (changed) {
    g_flags = ReadFlags();
    g_read = true;
  }
  return g_flags;
}

// Every call starts here: counted (in all and for its process), then
// slowed, hung or failed on command; err() is 0 or -EIO. In flight from its
// construction to its destruction (the call's return).
class Call {
 public:
  explicit Call(Kind kind) : process_(ProcessOf(fuse_get_context()->pid)) {
    g_calls[kind].fetch_add(1, std::memory_order_relaxed);
    const uint64_t now = g_in_flight.fetch_add(1) + 1;
    uint64_t max = g_max_in_flight.load();
    while (now > max && !g_max_in_flight.compare_exchange_weak(max, now)) {
    }
    {
      std::lock_guard lk(g_by_process_mu);
      Tally& t = g_by_process[process_];
      ++t.calls[kind];
      t.max_in_flight = std::max(t.max_in_flight, ++t.in_flight);
    }
    Flags f = CurrentFlags();
    if (f.fail_all) {
      err_ = -EIO;
      return;
    }
    while (f.hang_all) {
      usleep(20000);
      f = CurrentFlags();
    }
    if (f.latency_ms) usleep(static_cast<useconds_t>(f.latency_ms) * 1000);
  }
  ~Call() {
    g_in_flight.fetch_sub(1);
    std::lock_guard lk(g_by_process_mu);
    --g_by_process[process_].in_flight;
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  int err() const { return err_; }

 private:
  const pid_t process_;
  int err_ = 0;
};

// Blocks while SOURCE/.hang exists (checked every 20 ms).
void HangWhileAsked(const char* path) {
  if (!NameHas(path, "HANG")) return;
  const std::string flag = g_source + "/.hang";
  while (access(flag.c_str(), F_OK) == 0) usleep(20000);
}

// Sleeps the milliseconds SOURCE/.delay_ms holds, if it exists.
void DelayAsked() {
  if (long ms = CurrentFlags().delay_ms) usleep(static_cast<useconds_t>(ms) * 1000);
}

// Sleeps the microseconds per KiB SOURCE/.delay_us_per_kib holds (read as
// MillisIn reads a number: at most 10000) for `bytes` returned.
void DelayPerByte(size_t bytes) {
  if (long us = CurrentFlags().delay_us_per_kib) {
    usleep(static_cast<useconds_t>(static_cast<uint64_t>(us) * bytes / 1024));
  }
}

void* FaultInit(fuse_conn_info* /*conn*/, fuse_config* cfg) {
  cfg->use_ino = 0;
  cfg->entry_timeout = 0;  // tests mutate SOURCE underneath us
  cfg->attr_timeout = 0;
  cfg->negative_timeout = 0;
  return nullptr;
}

int FaultGetattr(const char* path, struct stat* st, fuse_file_info* fi) {
  Call call(kStat);
  if (call.err()) return call.err();
  if (fi == nullptr && NameHas(path, "STATHANG")) HangWhileAsked(path);
  if (fi == nullptr && std::strcmp(path, "/") == 0) {
    const std::string flag = g_source + "/.hang_root";
    while (access(flag.c_str(), F_OK) == 0) usleep(20000);
  }
  int rc = fi ? fstat(static_cast<int>(fi->fh), st) : lstat(Real(path).c_str(), st);
  return rc == -1 ? -errno : 0;
}

int FaultReadlink(const char* path, char* buf, size_t size) {
  Call call(kReadlink);
  if (call.err()) return call.err();
  if (size == 0) return -EINVAL;
  ssize_t n = readlink(Real(path).c_str(), buf, size - 1);
  if (n == -1) return -errno;
  buf[n] = '\0';
  return 0;
}

int FaultReaddir(const char* path, void* buf, fuse_fill_dir_t filler, off_t /*offset*/,
                 fuse_file_info* /*fi*/, fuse_readdir_flags /*flags*/) {
  Call call(kList);
  if (call.err()) return call.err();
  DIR* dir = opendir(Real(path).c_str());
  if (dir == nullptr) return -errno;
  while (dirent* de = readdir(dir)) {
    struct stat st {};
    st.st_ino = de->d_ino;
    st.st_mode = static_cast<mode_t>(de->d_type) << 12;
    if (filler(buf, de->d_name, &st, 0, static_cast<fuse_fill_dir_flags>(0)) != 0) break;
  }
  closedir(dir);
  return 0;
}

int FaultOpen(const char* path, fuse_file_info* fi) {
  Call call(kOpen);
  if (call.err()) return call.err();
  const Flags f = CurrentFlags();
  if ((fi->flags & O_ACCMODE) != O_RDONLY && !f.writable) return -EROFS;
  if (NameHas(path, "HANG")) {
    while (Exists("/.hang_open")) usleep(20000);
  }
  int fd = open(Real(path).c_str(), fi->flags & ~(O_CREAT | O_TRUNC | O_EXCL));
  if (fd == -1) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  if (f.page_cache) {
    fi->keep_cache = 1;
  } else {
    fi->direct_io = 1;
  }
  return 0;
}

int FaultRead(const char* path, char* buf, size_t size, off_t offset, fuse_file_info* fi) {
  Call call(kRead);
  if (call.err()) return call.err();
  if (IsFaulty(path)) return -EIO;
  HangWhileAsked(path);
  if (offset == 0) DelayAsked();
  ssize_t n = pread(static_cast<int>(fi->fh), buf, size, offset);
  if (n > 0) DelayPerByte(static_cast<size_t>(n));
  return n == -1 ? -errno : static_cast<int>(n);
}

int FaultRelease(const char* /*path*/, fuse_file_info* fi) {
  close(static_cast<int>(fi->fh));
  return 0;
}

int FaultStatfs(const char* path, struct statvfs* st) {
  Call call(kStatfs);
  if (call.err()) return call.err();
  return statvfs(Real(path).c_str(), st) == -1 ? -errno : 0;
}

int FaultAccess(const char* path, int mask) {
  Call call(kAccess);
  if (call.err()) return call.err();
  return access(Real(path).c_str(), mask) == -1 ? -errno : 0;
}

// The modifying calls, while SOURCE/.writable exists (see the top).
int Writable() { return CurrentFlags().writable ? 0 : -EROFS; }

int FaultCreate(const char* path, mode_t mode, fuse_file_info* fi) {
  Call call(kWrite);
  if (call.err()) return call.err();
  if (int e = Writable()) return e;
  int fd = open(Real(path).c_str(), fi->flags, mode);
  if (fd == -1) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  fi->direct_io = 1;
  return 0;
}

int FaultWrite(const char* /*path*/, const char* buf, size_t size, off_t offset,
               fuse_file_info* fi) {
  Call call(kWrite);
  if (call.err()) return call.err();
  if (int e = Writable()) return e;
  ssize_t n = pwrite(static_cast<int>(fi->fh), buf, size, offset);
  return n == -1 ? -errno : static_cast<int>(n);
}

int FaultTruncate(const char* path, off_t size, fuse_file_info* fi) {
  Call call(kWrite);
  if (call.err()) return call.err();
  if (int e = Writable()) return e;
  int rc = fi ? ftruncate(static_cast<int>(fi->fh), size) : truncate(Real(path).c_str(), size);
  return rc == -1 ? -errno : 0;
}

int FaultMkdir(const char* path, mode_t mode) {
  Call call(kWrite);
  if (call.err()) return call.err();
  if (int e = Writable()) return e;
  return mkdir(Real(path).c_str(), mode) == -1 ? -errno : 0;
}

int FaultUnlink(const char* path) {
  Call call(kWrite);
  if (call.err()) return call.err();
  if (int e = Writable()) return e;
  return unlink(Real(path).c_str()) == -1 ? -errno : 0;
}

int FaultRename(const char* from, const char* to, unsigned int flags) {
  Call call(kWrite);
  if (call.err()) return call.err();
  if (int e = Writable()) return e;
  if (flags != 0) return -EINVAL;
  return rename(Real(from).c_str(), Real(to).c_str()) == -1 ? -errno : 0;
}

int FaultFsync(const char* /*path*/, int /*datasync*/, fuse_file_info* fi) {
  Call call(kWrite);
  if (call.err()) return call.err();
  if (int e = Writable()) return e;
  return fsync(static_cast<int>(fi->fh)) == -1 ? -errno : 0;
}

// The counts, as described at the top; not a call of the store's.
int FaultGetxattr(const char* path, const char* name, char* value, size_t size) {
  constexpr char kCounts[] = "user.faultfs.counts";
  if (std::strcmp(path, "/") != 0 || std::strncmp(name, kCounts, sizeof kCounts - 1) != 0) {
    return -ENODATA;
  }
  std::array<uint64_t, kKinds> n{};
  uint64_t most = 0;
  if (name[sizeof kCounts - 1] == '\0') {
    for (int k = 0; k < kKinds; ++k) n[k] = g_calls[k].load(std::memory_order_relaxed);
    most = g_max_in_flight.load();
  } else if (name[sizeof kCounts - 1] == '.') {
    const pid_t process = static_cast<pid_t>(std::strtol(name + sizeof kCounts, nullptr, 10));
    std::lock_guard lk(g_by_process_mu);
    if (auto it = g_by_process.find(process); it != g_by_process.end()) {
      n = it->second.calls;
      most = it->second.max_in_flight;
    }
  } else {
    return -ENODATA;
  }
  std::string text;
  for (int k = 0; k < kKinds; ++k) {
    if (k) text += ' ';
    text += std::string(kKindNames[k]) + "=" + std::to_string(n[k]);
  }
  text += " max_in_flight=" + std::to_string(most);
  if (size == 0) return static_cast<int>(text.size());
  if (size < text.size()) return -ERANGE;
  std::memcpy(value, text.data(), text.size());
  return static_cast<int>(text.size());
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: faultfs SOURCE MOUNTPOINT [fuse options]\n");
    return 2;
  }
  char resolved[PATH_MAX];
  if (realpath(argv[1], resolved) == nullptr) {
    std::fprintf(stderr, "faultfs: %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  g_source = resolved;
  if (g_source == "/") g_source.clear();
  g_watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (g_watch >= 0 &&
      inotify_add_watch(g_watch, resolved,
                        IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM |
                            IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
    close(g_watch);
    g_watch = -1;  // every call reads the control files itself
  }

  fuse_operations ops {};
  ops.init = FaultInit;
  ops.getattr = FaultGetattr;
  ops.readlink = FaultReadlink;
  ops.readdir = FaultReaddir;
  ops.open = FaultOpen;
  ops.read = FaultRead;
  ops.release = FaultRelease;
  ops.statfs = FaultStatfs;
  ops.access = FaultAccess;
  ops.getxattr = FaultGetxattr;
  ops.create = FaultCreate;
  ops.write = FaultWrite;
  ops.truncate = FaultTruncate;
  ops.mkdir = FaultMkdir;
  ops.unlink = FaultUnlink;
  ops.rename = FaultRename;
  ops.fsync = FaultFsync;

  // Drop SOURCE from argv; libfuse parses the rest (MOUNTPOINT, -f, -o ...).
  std::vector<char*> args;
  args.push_back(argv[0]);
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  return fuse_main(static_cast<int>(args.size() - 1), args.data(), &ops, nullptr);
}
