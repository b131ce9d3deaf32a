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
// (a high-latency store: an object store's time to first byte). A stat
// (getattr by path) of a file whose name contains "STATHANG" blocks while
// SOURCE/.hang exists, as a lookup on a hung NFS server; so does a stat of
// the root while SOURCE/.hang_root exists. Everything else
// is a plain passthrough. Modifying operations are not implemented (ENOSYS /
// EROFS from the kernel); tests change SOURCE directly instead.
//
// Files are opened with direct_io so that every read reaches this process and
// the kernel page cache of the faultfs mount never hides a fault; while
// SOURCE/.page_cache exists they are opened with keep_cache instead (the
// kernel's page cache of the mount serves repeated reads: a benchmark's
// page-cache baseline over a slow store).
//
// Uses the high-level libfuse 3 API; single-threaded loop is not forced, so
// every callback is reentrant (no shared mutable state besides g_source).

#define FUSE_USE_VERSION 31

#include <fuse.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

// Blocks while SOURCE/.hang exists (checked every 20 ms).
void HangWhileAsked(const char* path) {
  if (!NameHas(path, "HANG")) return;
  const std::string flag = g_source + "/.hang";
  while (access(flag.c_str(), F_OK) == 0) usleep(20000);
}

// Sleeps the milliseconds SOURCE/.delay_ms holds, if it exists (at most 10 s).
void DelayAsked() {
  const std::string file = g_source + "/.delay_ms";
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd == -1) return;
  char buf[16] = {};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return;
  const long ms = std::strtol(buf, nullptr, 10);
  if (ms > 0 && ms <= 10000) usleep(static_cast<useconds_t>(ms) * 1000);
}

void* FaultInit(fuse_conn_info* /*conn*/, fuse_config* cfg) {
  cfg->use_ino = 0;
  cfg->entry_timeout = 0;  // tests mutate SOURCE underneath us
  cfg->attr_timeout = 0;
  cfg->negative_timeout = 0;
  return nullptr;
}

int FaultGetattr(const char* path, struct stat* st, fuse_file_info* fi) {
  if (fi == nullptr && NameHas(path, "STATHANG")) HangWhileAsked(path);
  if (fi == nullptr && std::strcmp(path, "/") == 0) {
    const std::string flag = g_source + "/.hang_root";
    while (access(flag.c_str(), F_OK) == 0) usleep(20000);
  }
  int rc = fi ? fstat(static_cast<int>(fi->fh), st) : lstat(Real(path).c_str(), st);
  return rc == -1 ? -errno : 0;
}

int FaultReadlink(const char* path, char* buf, size_t size) {
  if (size == 0) return -EINVAL;
  ssize_t n = readlink(Real(path).c_str(), buf, size - 1);
  if (n == -1) return -errno;
  buf[n] = '\0';
  return 0;
}

int FaultReaddir(const char* path, void* buf, fuse_fill_dir_t filler, off_t /*offset*/,
                 fuse_file_info* /*fi*/, fuse_readdir_flags /*flags*/) {
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
  if ((fi->flags & O_ACCMODE) != O_RDONLY) return -EROFS;
  int fd = open(Real(path).c_str(), fi->flags & ~(O_CREAT | O_TRUNC | O_EXCL));
  if (fd == -1) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  if (access((g_source + "/.page_cache").c_str(), F_OK) == 0) {
    fi->keep_cache = 1;
  } else {
    fi->direct_io = 1;
  }
  return 0;
}

int FaultRead(const char* path, char* buf, size_t size, off_t offset, fuse_file_info* fi) {
  if (IsFaulty(path)) return -EIO;
  HangWhileAsked(path);
  if (offset == 0) DelayAsked();
  ssize_t n = pread(static_cast<int>(fi->fh), buf, size, offset);
  return n == -1 ? -errno : static_cast<int>(n);
}

int FaultRelease(const char* /*path*/, fuse_file_info* fi) {
  close(static_cast<int>(fi->fh));
  return 0;
}

int FaultStatfs(const char* path, struct statvfs* st) {
  return statvfs(Real(path).c_str(), st) == -1 ? -errno : 0;
}

int FaultAccess(const char* path, int mask) {
  return access(Real(path).c_str(), mask) == -1 ? -errno : 0;
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

  // Drop SOURCE from argv; libfuse parses the rest (MOUNTPOINT, -f, -o ...).
  std::vector<char*> args;
  args.push_back(argv[0]);
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  return fuse_main(static_cast<int>(args.size() - 1), args.data(), &ops, nullptr);
}
