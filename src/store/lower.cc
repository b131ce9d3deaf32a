#include "epochfs/store/lower.h"

#include "epochfs/store/byte_pool.h"
#include "epochfs/store/held_dirs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>

namespace epochfs::store {
namespace {

// Pieces a gated operation is cut into: the bound is on each.
constexpr uint64_t kReadPiece = 8ull << 20;
constexpr size_t kListPiece = 512;
constexpr size_t kStatPiece = 1024;

using RootFd = std::shared_ptr<UniqueFd>;

// The dataset's errno rule: a path that does not resolve beneath the root
// (missing, a file used as a directory, a symlink, an escape RESOLVE_BENEATH
// refused) is NotFound; refusals and a too-long name keep their own codes;
// anything else is an I/O error of the dataset.
Status LowerStatus(int err, const std::string& what) {
  switch (err) {
    case ENOENT:
      return MissingOnLower(what);
    case ENOTDIR:
    case ELOOP:
    case EXDEV:
      return ErrnoStatus(Code::kNotFound, err, what);
    case EACCES:
    case EPERM:
    case ENAMETOOLONG:
      return StatusFromErrno(err, what);
    default:
      return ErrnoStatus(Code::kIoError, err, what);
  }
}

Result<UniqueFd> OpenBeneath(int root, const std::string& rel, int flags) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC | O_NOFOLLOW);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const char* p = rel.empty() ? "." : rel.c_str();
  long fd = ::syscall(SYS_openat2, root, p, &how, sizeof(how));
  if (fd < 0 && errno == EAGAIN) {  // a concurrent rename raced the lookup
    fd = ::syscall(SYS_openat2, root, p, &how, sizeof(how));
  }
  if (fd < 0) return LowerStatus(errno, rel.empty() ? "." : rel);
  return UniqueFd(static_cast<int>(fd));
}

// OpenBeneath of `rel`, relative to its directory's held descriptor when
// `held` (HeldDirs: one lookup, its name's, instead of one per component);
// from the root when the directory is not held or the lookup beneath it
// fails (the root walk's answer stands).
Result<UniqueFd> OpenNear(int root, HeldDirs* held, const std::string& rel, int flags) {
  if (held != nullptr) {
    const DirAndName dn = SplitRel(rel);
    if (!dn.dir.empty() && !dn.name.empty()) {
      if (auto dir = held->Get(root, dn.dir)) {
        auto fd = OpenBeneath(dir->get(), dn.name, flags);
        if (fd.ok()) return fd;
        held->Drop(dn.dir);
      }
    }
  }
  return OpenBeneath(root, rel, flags);
}

Result<struct stat> StatBeneath(int root, HeldDirs* held, const std::string& rel) {
  auto fd = OpenNear(root, held, rel, O_PATH);
  if (!fd.ok()) return fd.status();
  struct stat st;
  if (::fstat(fd.value().get(), &st) != 0) return LowerStatus(errno, rel);
  return st;
}

// pread of up to len bytes at off into buf (EINTR retried); bytes read.
Result<size_t> PreadAll(int fd, char* buf, size_t len, uint64_t off) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, buf + done, len - done, static_cast<off_t>(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return LowerStatus(errno, "read");
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

// Reads `len` bytes of `fd` at `off` into buf, which has room for len + 1:
// each pread asks for one byte more than is left, so a file that ends where
// its stat said answers the last one short (its end, without a read of its
// own: on a store where every call waits, one call less per file), and one
// that grew answers the extra byte. Returns the bytes read: len, fewer when
// the file shrank, len + 1 when it goes on.
Result<size_t> PreadToEnd(int fd, char* buf, size_t len, uint64_t off) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, buf + done, len + 1 - done, static_cast<off_t>(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return LowerStatus(errno, "read");
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  if (len == 0) {  // the end of an empty file: one pread all the same
    ssize_t n;
    do {
      n = ::pread(fd, buf, 1, static_cast<off_t>(off));
    } while (n < 0 && errno == EINTR);
    if (n < 0) return LowerStatus(errno, "read");
    done = static_cast<size_t>(n);
  }
  return done;
}

// The operations below may be given up on and run on after their caller has
// closed `fd` (the number then reused by another open): each works on a
// duplicate it owns (LowerGate: operations own what they touch).
Result<std::shared_ptr<const UniqueFd>> OwnedCopy(int fd) {
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return LowerStatus(errno, "dup");
  return std::make_shared<const UniqueFd>(copy);
}

// The descriptor a read works on: `fd` itself, or when the reads are gated a
// duplicate the operations own (kept alive by *owned).
Result<int> UsableFd(int fd, bool gated, std::shared_ptr<const UniqueFd>* owned) {
  if (!gated) return fd;
  auto own = OwnedCopy(fd);
  if (!own.ok()) return own.status();
  *owned = own.value();
  return (*owned)->get();
}

}  // namespace

Status MissingOnLower(const std::string& rel) { return ErrnoStatus(Code::kNotFound, ENOENT, rel); }

template <class T, class F>
Result<T> Lower::Gated(LowerCall kind, uint64_t n, const std::string& what, F fn) const {
  health_->Count(kind, n);
  if (!gate_) {
    Result<T> r = fn();
    health_->Saw(r.status(), what);
    return r;
  }
  // The operation owns its result, and tells LOWER's health its outcome
  // itself: a worker may finish it after we gave up (the health is shared,
  // it may outlive this Lower).
  struct Out {
    std::optional<Result<T>> r;
    std::atomic<bool> done{false};
  };
  auto out = std::make_shared<Out>();
  Status s = gate_->Run(
      [out, fn = std::move(fn), health = health_, what]() mutable {
        out->r.emplace(fn());
        health->Saw(out->r->status(), what);
        out->done.store(true, std::memory_order_release);
      },
      what);
  if (!s.ok()) {
    // Given up on: LOWER is down from now (an inline call's timeout was told
    // by the watchdog already), unless the call has answered meanwhile (an
    // inline one returns here only once it has).
    if (!out->done.load(std::memory_order_acquire)) health_->Saw(s, what);
    return s;
  }
  return std::move(*out->r);
}

Result<std::unique_ptr<Lower>> Lower::Open(const std::string& root, LowerGateOptions gate,
                                           size_t held_dirs) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return LowerStatus(errno, root);
  std::unique_ptr<Lower> l(new Lower(root, UniqueFd(fd)));
  l->versions_ = VersionRule::ForFileSystemOf(fd);
  if (held_dirs > 0) l->held_ = std::make_shared<HeldDirs>(held_dirs);
  if (gate.timeout.count() > 0) {
    l->gate_ = std::make_unique<LowerGate>(gate);
    l->gate_->OnTimeout([health = l->health_](const Status& s, const std::string& what) {
      health->Saw(s, what);
    });
  }
  return l;
}

void Lower::StartGate() {
  if (gate_) gate_->Start();
}

size_t Lower::held_dirs_opened() const { return held_ ? held_->opened() : 0; }

std::optional<HeldDirs::DirAttrs> Lower::HeldDirAttrs(const std::string& dir) const {
  return held_ ? held_->Attrs(dir) : std::nullopt;
}

LowerGateCounters Lower::gate_counters() const {
  return gate_ ? gate_->counters() : LowerGateCounters{};
}

uint32_t Lower::ReleasePrefetch() const { return gate_ ? gate_->ReleasePrefetch() : 0; }

Result<struct stat> Lower::Stat(const std::string& rel, LowerCall kind) const {
  return Gated<struct stat>(kind, 1, "stat " + rel, [root = root_fd_, held = held_, rel] {
    return StatBeneath(root->get(), held.get(), rel);
  });
}

std::vector<Result<struct stat>> Lower::StatMany(const std::vector<std::string>& rels) const {
  std::vector<Result<struct stat>> out;
  out.reserve(rels.size());
  for (size_t at = 0; at < rels.size(); at += kStatPiece) {
    const size_t end = std::min(rels.size(), at + kStatPiece);
    auto piece = std::make_shared<std::vector<std::string>>(rels.begin() + at, rels.begin() + end);
    using Stats = std::vector<Result<struct stat>>;
    auto got = Gated<Stats>(LowerCall::kStat, end - at, "stat " + rels[at] + " and " + std::to_string(end - at - 1) + " more",
                            [root = root_fd_, held = held_, piece]() -> Result<Stats> {
                              Stats s;
                              s.reserve(piece->size());
                              for (const std::string& r : *piece) s.push_back(StatBeneath(root->get(), held.get(), r));
                              return s;
                            });
    if (!got.ok()) {
      for (size_t i = at; i < end; ++i) out.push_back(got.status());
      continue;
    }
    for (auto& r : got.value()) out.push_back(std::move(r));
  }
  return out;
}

Result<struct stat> Lower::FStat(int fd) const {
  if (!gate_) {
    return Gated<struct stat>(LowerCall::kStat, 1, "fstat", [fd]() -> Result<struct stat> {
      struct stat st;
      if (::fstat(fd, &st) != 0) return LowerStatus(errno, "fstat");
      return st;
    });
  }
  auto own = OwnedCopy(fd);
  if (!own.ok()) return own.status();
  return Gated<struct stat>(LowerCall::kStat, 1, "fstat", [f = own.value()]() -> Result<struct stat> {
    struct stat st;
    if (::fstat(f->get(), &st) != 0) return LowerStatus(errno, "fstat");
    return st;
  });
}

static mode_t TypeOf(unsigned char d_type) {
  switch (d_type) {
    case DT_REG: return S_IFREG;
    case DT_DIR: return S_IFDIR;
    case DT_LNK: return S_IFLNK;
    case DT_FIFO: return S_IFIFO;
    case DT_SOCK: return S_IFSOCK;
    case DT_CHR: return S_IFCHR;
    case DT_BLK: return S_IFBLK;
    default: return 0;
  }
}

Result<std::vector<DirEntry>> Lower::List(const std::string& rel) const {
  return Gated<std::vector<DirEntry>>(
      LowerCall::kList, 1, "list " + rel, [root = root_fd_, rel]() -> Result<std::vector<DirEntry>> {
        auto fd = OpenBeneath(root->get(), rel, O_RDONLY | O_DIRECTORY);
        if (!fd.ok()) return fd.status();
        DIR* dir = ::fdopendir(fd.value().get());
        if (dir == nullptr) return LowerStatus(errno, rel);
        (void)fd.value().release();  // the DIR owns it now
        std::vector<DirEntry> out;
        errno = 0;
        while (struct dirent* de = ::readdir(dir)) {
          if (std::strcmp(de->d_name, ".") != 0 && std::strcmp(de->d_name, "..") != 0) {
            out.push_back({de->d_name, TypeOf(de->d_type)});
          }
          errno = 0;
        }
        const int err = errno;
        ::closedir(dir);
        if (err != 0) return LowerStatus(err, rel);
        return out;
      });
}

Result<std::vector<std::optional<struct stat>>> Lower::StatEntries(
    const std::string& rel, const std::vector<std::string>& names) const {
  using Stats = std::vector<std::optional<struct stat>>;
  auto dir = Gated<std::shared_ptr<UniqueFd>>(
      LowerCall::kStat, 0, "stat in " + rel, [root = root_fd_, rel]() -> Result<std::shared_ptr<UniqueFd>> {
        auto fd = OpenBeneath(root->get(), rel, O_PATH | O_DIRECTORY);
        if (!fd.ok()) return fd.status();
        return std::make_shared<UniqueFd>(std::move(fd).value());
      });
  if (!dir.ok()) return dir.status();
  auto all = std::make_shared<std::vector<std::string>>(names);
  Stats out;
  out.reserve(names.size());
  for (size_t at = 0; at < names.size(); at += kListPiece) {
    const size_t end = std::min(names.size(), at + kListPiece);
    auto piece = Gated<Stats>(LowerCall::kStat, end - at, "stat in " + rel, [all, d = dir.value(), at, end]() -> Result<Stats> {
      Stats v;
      v.reserve(end - at);
      for (size_t i = at; i < end; ++i) {
        struct stat st;
        // Not beneath-checked: a name, never a path, relative to a
        // directory opened beneath the root; symlinks are not followed.
        if (::fstatat(d->get(), (*all)[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
          v.emplace_back(st);
        } else {
          v.emplace_back(std::nullopt);
        }
      }
      return v;
    });
    if (!piece.ok()) return piece.status();
    for (auto& st : piece.value()) out.push_back(st);
  }
  return out;
}

Result<std::string> Lower::ReadLink(const std::string& rel) const {
  return Gated<std::string>(LowerCall::kReadlink, 1, "readlink " + rel, [root = root_fd_, rel]() -> Result<std::string> {
    auto fd = OpenBeneath(root->get(), rel, O_PATH);
    if (!fd.ok()) return fd.status();
    char buf[PATH_MAX];
    ssize_t n = ::readlinkat(fd.value().get(), "", buf, sizeof(buf));
    if (n < 0) return LowerStatus(errno, rel);
    return std::string(buf, static_cast<size_t>(n));
  });
}

Result<struct statvfs> Lower::StatFs() const {
  return Gated<struct statvfs>(LowerCall::kStatfs, 1, "statfs", [root = root_fd_, path = root_path_]() -> Result<struct statvfs> {
    struct statvfs sv;
    if (::fstatvfs(root->get(), &sv) != 0) return LowerStatus(errno, path);
    return sv;
  });
}

Result<UniqueFd> Lower::OpenFile(const std::string& rel) const {
  return Gated<UniqueFd>(LowerCall::kOpen, 1, "open " + rel,
                         [root = root_fd_, held = held_, rel] {
                           return OpenNear(root->get(), held.get(), rel, O_RDONLY);
                         });
}

namespace {

// ReadWhole's piece and check, on the caller's thread: exactly `size` (at
// most one piece) bytes of `fd`, IoError when it is shorter or longer; one
// pread for a file that is as its stat said (PreadToEnd).
Result<std::vector<char>> ReadSmall(int fd, uint64_t size) {
  std::vector<char> data = TakeBufferToFill(size + 1);
  auto n = PreadToEnd(fd, data.data(), size, 0);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  if (!n.ok()) return n.status();
  if (n.value() < size) return IoError("lower file shrank while being read");
  if (n.value() > size) return IoError("lower file grew while being read");
  data.resize(size);
  return data;
}

}  // namespace

Result<Lower::OpenedFile> Lower::OpenAndRead(const std::string& rel, uint64_t max_bytes,
                                             std::shared_ptr<const Credentials> as,
                                             Attrs attrs) const {
  const bool held_attrs = attrs == Attrs::kHeld;
  auto r = Gated<OpenedFile>(LowerCall::kOpen, 1, "open " + rel,
                             [root = root_fd_, held = held_, rel, max_bytes, as, held_attrs]() -> Result<OpenedFile> {
    auto fd = OpenNear(root->get(), held.get(), rel, O_RDONLY);
    if (!fd.ok()) return fd.status();
    OpenedFile out;
    out.fd = std::move(fd).value();
    // After the open and before the read, as fstat's would be.
    const int got = held_attrs ? HeldAttrs(out.fd.get(), &out.st) : ::fstat(out.fd.get(), &out.st);
    if (got != 0) return LowerStatus(errno, "fstat");
    out.stat_asked = !held_attrs;
    auto read_small = [&] {
      const uint64_t size = static_cast<uint64_t>(out.st.st_size);
      if (S_ISREG(out.st.st_mode) && max_bytes != 0 && size <= max_bytes && size <= kReadPiece &&
          (as == nullptr || MayAccess(*as, out.st, kMayRead))) {
        out.data = ReadSmall(out.fd.get(), size);
      }
    };
    read_small();
    // The size held was not the file's (it changed since the kernel last
    // asked): asked afresh, and read again once with what LOWER says now.
    if (held_attrs && out.data && !out.data->ok()) {
      struct stat now;
      if (::fstat(out.fd.get(), &now) != 0) return LowerStatus(errno, "fstat");
      out.stat_asked = true;
      if (now.st_size != out.st.st_size || now.st_mtim.tv_sec != out.st.st_mtim.tv_sec ||
          now.st_mtim.tv_nsec != out.st.st_mtim.tv_nsec) {
        out.st = now;
        out.data.reset();
        read_small();
      }
    }
    return out;
  });
  if (r.ok() && r.value().stat_asked) health_->Count(LowerCall::kStat, 1);
  if (r.ok() && r.value().data) health_->Count(LowerCall::kRead, 1);
  return r;
}

Result<std::vector<char>> Lower::ReadWhole(int fd, uint64_t size) const {
  // Each piece is read into the shared buffer by its own operation; a piece
  // given up on may still write into it, so it is handed out only when every
  // piece has finished.
  // One byte of room past the end: the last piece asks for it, so that a
  // file that grew since its stat (which would be served truncated) is
  // refused without a read of its own (PreadToEnd).
  auto data = std::make_shared<std::vector<char>>(TakeBufferToFill(size + 1));
  std::shared_ptr<const UniqueFd> f;
  auto usable = UsableFd(fd, gate_ != nullptr, &f);
  if (!usable.ok()) return usable.status();
  const int use = usable.value();
  uint64_t done = 0;
  do {
    const uint64_t len = std::min(size - done, kReadPiece);
    const bool last = done + len == size;
    auto n = Gated<size_t>(LowerCall::kRead, 1, "read", [f, use, data, done, len, last] {
      if (!last) return PreadAll(use, data->data() + done, len, done);
      auto r = PreadToEnd(use, data->data() + done, len, done);
      ::posix_fadvise(use, 0, 0, POSIX_FADV_DONTNEED);
      return r;
    });
    if (!n.ok()) return n.status();
    if (n.value() > len) return IoError("lower file grew while being read");
    if (n.value() == 0 && len != 0) return IoError("lower file shrank while being read");
    done += n.value();
  } while (done < size);
  data->resize(size);
  return std::move(*data);
}

Result<std::vector<char>> Lower::ReadAt(int fd, size_t len, uint64_t off) const {
  std::shared_ptr<const UniqueFd> f;
  auto usable = UsableFd(fd, gate_ != nullptr, &f);
  if (!usable.ok()) return usable.status();
  const int use = usable.value();
  return Gated<std::vector<char>>(LowerCall::kRead, 1, "read", [f, use, len, off]() -> Result<std::vector<char>> {
    std::vector<char> buf = TakeBufferToFill(len);
    auto n = PreadAll(use, buf.data(), len, off);
    if (!n.ok()) return n.status();
    buf.resize(n.value());
    ::posix_fadvise(use, static_cast<off_t>(off), static_cast<off_t>(n.value()),
                    POSIX_FADV_DONTNEED);
    return buf;
  });
}

}  // namespace epochfs::store
