// SpillStoreImpl: the spill area's namespace (files, directories, renames,
// quota rebuild at Open) over StoreCore and SpillFileImpl (spill_file.h).
#include "epochfs/spill/spill_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "epochfs/common/log.h"
#include "spill_file.h"

namespace epochfs::spill {
namespace {

constexpr size_t kMaxOpenFiles = 1024;  // idle files past this are closed
constexpr const char* kDirAttr = "user.epochfs.attr";
constexpr int kFileFlags = O_RDWR | O_DIRECT | O_CLOEXEC | O_NOFOLLOW;

std::string PathOf(const std::string& rel) { return rel.empty() ? std::string(".") : rel; }

struct DirAttr {
  uint32_t mode, uid, gid;
};

}  // namespace

class SpillStoreImpl final : public SpillStore {
 public:
  explicit SpillStoreImpl(std::shared_ptr<StoreCore> core) : core_(std::move(core)) {}
  ~SpillStoreImpl() override {
    Status s = SyncAll();
    if (!s.ok()) log::Error("spill: closing the store: " + s.ToString());
    std::unordered_map<std::string, std::shared_ptr<SpillFileImpl>> files;
    {
      std::lock_guard ns(ns_mu_);
      files.swap(files_);
    }
  }

  Status Scan(const std::string& dir);

  Result<SpillAttr> Stat(const std::string& rel) override;
  Result<std::shared_ptr<SpillFile>> OpenFile(const std::string& rel, bool create, bool exclusive,
                                             bool truncate, uint32_t mode, uid_t uid,
                                             gid_t gid) override;
  Status Mkdir(const std::string& rel, uint32_t mode, uid_t uid, gid_t gid) override;
  Status Rmdir(const std::string& rel) override;
  Status Unlink(const std::string& rel) override;
  Status Rename(const std::string& from, const std::string& to, bool noreplace) override;
  Status Chmod(const std::string& rel, uint32_t mode) override;
  Status Chown(const std::string& rel, uid_t uid, gid_t gid) override;
  Result<std::vector<SpillDirEntry>> List(const std::string& rel) override;
  Status Prefetch(const std::string& rel) override;
  Status WriteOut(const std::string& rel) override;
  bool Resident(const std::string& rel) override;
  SpillStats stats() const override {
    std::lock_guard lock(core_->mu);
    return core_->Stats();
  }
  Status SyncAll() override;

 private:
  int root() const { return core_->root_fd(); }
  // The open file `rel` (opened if needed). REQUIRES: ns_mu_ held.
  Result<std::shared_ptr<SpillFileImpl>> OpenLocked(const std::string& rel, bool create,
                                                    bool exclusive, uint32_t mode, uid_t uid,
                                                    gid_t gid);
  // Logical size in the header of a file that is not open (0 if unreadable).
  // The logical size and owner a file's header records ({0, 0} if unreadable).
  struct Owned {
    uint64_t size = 0;
    uint32_t uid = 0;
  };
  Owned HeaderOwned(const std::string& rel);
  void TrimLocked();
  Result<DirAttr> ReadDirAttr(const std::string& rel, const struct stat& st);
  // The owner of directory `rel` (its attributes; 0 when it cannot be read).
  uint32_t DirOwner(const std::string& rel);
  Status WriteDirAttr(const std::string& rel, const DirAttr& a);
  template <class OnDir, class OnFile>
  Status ChangeAttr(const std::string& rel, const std::string& what, OnDir on_dir,
                    OnFile on_file);

  std::shared_ptr<StoreCore> core_;
  mutable std::mutex ns_mu_;  // lock order: before SpillFileImpl::op_mu_ and StoreCore::mu
  std::unordered_map<std::string, std::shared_ptr<SpillFileImpl>> files_;  // guarded by ns_mu_
};

Result<std::unique_ptr<SpillStore>> SpillStore::Open(const SpillOptions& options) {
  if (options.dir.empty()) return InvalidArgument("spill.path is empty");
  if (options.chunk_bytes < kBlock || options.chunk_bytes > (64u << 20) ||
      (options.chunk_bytes & (options.chunk_bytes - 1)) != 0) {
    return InvalidArgument("spill chunk size must be a power of two between 4 KiB and 64 MiB");
  }
  if (options.queue_depth == 0 || options.queue_depth > 4096) {
    return InvalidArgument("spill queue depth must be between 1 and 4096");
  }
  // mkdir -p
  for (size_t pos = 1;; ++pos) {
    pos = options.dir.find('/', pos);
    const std::string prefix = options.dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return StatusFromErrno(errno, "spill.path: mkdir " + prefix);
    }
    if (pos == std::string::npos) break;
  }
  UniqueFd root(::open(options.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return StatusFromErrno(errno, "spill.path: open " + options.dir);
  // O_DIRECT probe (tmpfs and some FUSE filesystems refuse it).
  const char* probe = ".epochfs-direct-probe";
  int pfd = ::openat(root.get(), probe, O_CREAT | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
  if (pfd < 0) {
    const int err = errno;
    if (err == EINVAL) {
      return Status(Code::kUnsupported,
                    "spill.path " + options.dir + " does not support O_DIRECT (tmpfs?)");
    }
    return StatusFromErrno(err, "spill.path: create a file in " + options.dir);
  }
  ::close(pfd);
  ::unlinkat(root.get(), probe, 0);
  auto core = StoreCore::Create(options, std::move(root));
  if (!core.ok()) return core.status();
  auto store = std::make_unique<SpillStoreImpl>(std::move(core).value());
  Status s = store->Scan("");
  if (!s.ok()) return s;
  return std::unique_ptr<SpillStore>(std::move(store));
}

// Rebuilds the file count, the quota's byte sums and the entries per owner
// from the headers and the directories' attributes.
Status SpillStoreImpl::Scan(const std::string& dir) {
  int dfd = ::openat(root(), PathOf(dir).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return StatusFromErrno(errno, "spill scan " + PathOf(dir));
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    ::close(dfd);
    return StatusFromErrno(errno, "spill scan " + PathOf(dir));
  }
  std::vector<std::string> subdirs;
  while (struct dirent* de = ::readdir(d)) {
    const std::string name = de->d_name;
    if (name == "." || name == "..") continue;
    const std::string rel = dir.empty() ? name : dir + "/" + name;
    struct stat st {};
    if (::fstatat(dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      subdirs.push_back(rel);
      const uint32_t owner = DirOwner(rel);
      std::lock_guard lock(core_->mu);
      core_->AddEntry(owner);
    } else if (S_ISREG(st.st_mode)) {
      const Owned o = HeaderOwned(rel);
      std::lock_guard lock(core_->mu);
      core_->AddFile(o.uid, o.size);
    }
  }
  ::closedir(d);
  for (const auto& s : subdirs) {
    Status st = Scan(s);
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

SpillStoreImpl::Owned SpillStoreImpl::HeaderOwned(const std::string& rel) {
  UniqueFd fd(::openat(root(), rel.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return {};
  FileHeader h;
  bool empty = false;
  Status s = ReadHeaderBlock(fd.get(), &h, &empty);
  if (!s.ok()) {
    log::Warn("spill: " + rel + ": " + s.ToString());
    return {};
  }
  return empty ? Owned{} : Owned{h.size, h.uid};
}

Result<std::shared_ptr<SpillFileImpl>> SpillStoreImpl::OpenLocked(const std::string& rel,
                                                                   bool create, bool exclusive,
                                                                   uint32_t mode, uid_t uid,
                                                                   gid_t gid) {
  if (rel.empty()) return IsDirectory("spill: the root is a directory");
  auto it = files_.find(rel);
  if (it != files_.end()) {
    if (create && exclusive) return Status(Code::kExists, "spill file " + rel + " exists");
    return it->second;
  }
  const uint32_t cb = core_->chunk_bytes();
  int fd = -1;
  bool created = false;
  if (create) {
    {
      std::lock_guard lock(core_->mu);
      if (Status room = core_->RoomForEntry(uid); !room.ok()) {
        struct stat st {};  // an existing file opens; only a new one needs room
        if (exclusive || ::fstatat(root(), rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return room;
      }
    }
    fd = ::openat(root(), rel.c_str(), kFileFlags | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) created = true;
    else if (errno != EEXIST || exclusive) return StatusFromErrno(errno, "spill create " + rel);
  }
  if (fd < 0) {
    fd = ::openat(root(), rel.c_str(), kFileFlags);
    if (fd < 0) return StatusFromErrno(errno, "spill open " + rel);
  }
  UniqueFd ufd(fd);
  FileHeader h;
  uint64_t backing = kBlock;
  std::vector<uint8_t> bitmap0(kIndexBitmapBytes, 0);  // a new file: nothing written
  bool index_ok = true;
  if (created) {
    h.chunk_bytes = cb;
    h.mode = S_IFREG | (mode & 07777);
    h.uid = uid;
    h.gid = gid;
    h.mtime = MtimeNow();
    Status s;
    if (core_->is_root() && (::fchown(fd, uid, gid) != 0 || ::fchmod(fd, mode & 0777) != 0)) {
      s = StatusFromErrno(errno, "spill chown " + rel);
    }
    if (s.ok()) s = WriteHeaderBlock(fd, h, {});
    if (!s.ok()) {
      ::unlinkat(root(), rel.c_str(), 0);
      return s;
    }
    std::lock_guard lock(core_->mu);
    core_->AddFile(uid, 0);
  } else {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return StatusFromErrno(errno, "spill fstat " + rel);
    if (!S_ISREG(st.st_mode)) return InvalidArgument("spill: " + rel + " is not a regular file");
    bool empty = false;
    Status s = ReadHeaderBlock(fd, &h, &empty, bitmap0, &index_ok);
    if (!s.ok()) return Status(s.code(), "spill file " + rel + ": " + s.message());
    if (empty) {
      // Created, then a crash before its header was written: an empty file.
      h = FileHeader{};
      h.chunk_bytes = cb;
      h.mode = S_IFREG | (st.st_mode & 07777);
      h.uid = st.st_uid;
      h.gid = st.st_gid;
      h.mtime = st.st_mtim;
      index_ok = true;
      s = WriteHeaderBlock(fd, h, {});
      if (!s.ok()) return s;
    } else if (h.chunk_bytes != cb) {
      return Status(Code::kUnsupported, "spill file " + rel + " has chunks of " +
                                            std::to_string(h.chunk_bytes) + " bytes, not " +
                                            std::to_string(cb));
    }
    backing = static_cast<uint64_t>(st.st_size);
    const uint64_t end = SlotOffset(ChunkCount(h.size, cb), cb);
    if (backing > end) {
      // Slots past the logical end (writes never synced): cut them so that
      // their bytes never reappear.
      if (::ftruncate(fd, static_cast<off_t>(end)) != 0) return StatusFromErrno(errno, "spill truncate " + rel);
      backing = end;
    }
  }
  auto f = std::make_shared<SpillFileImpl>(core_, rel, std::move(ufd), h, backing,
                                           index_ok ? std::span<const uint8_t>(bitmap0)
                                                    : std::span<const uint8_t>());
  if (created) f->NeedDirSync();
  TrimLocked();
  files_[rel] = f;
  return f;
}

void SpillStoreImpl::TrimLocked() {
  if (files_.size() < kMaxOpenFiles) return;
  for (auto it = files_.begin(); it != files_.end();) {
    if (it->second.use_count() == 1 && it->second->Idle()) it = files_.erase(it);
    else ++it;
  }
}

Result<std::shared_ptr<SpillFile>> SpillStoreImpl::OpenFile(const std::string& rel, bool create,
                                                           bool exclusive, bool truncate,
                                                           uint32_t mode, uid_t uid, gid_t gid) {
  std::shared_ptr<SpillFileImpl> f;
  {
    std::lock_guard ns(ns_mu_);
    auto r = OpenLocked(rel, create, exclusive, mode, uid, gid);
    if (!r.ok()) return r.status();
    f = std::move(r).value();
  }
  if (truncate) {
    Status s = f->Truncate(0);
    if (!s.ok()) return s;
  }
  return std::shared_ptr<SpillFile>(std::move(f));
}

Result<DirAttr> SpillStoreImpl::ReadDirAttr(const std::string& rel, const struct stat& st) {
  DirAttr a{st.st_mode, st.st_uid, st.st_gid};
  uint32_t v[3];
  const std::string p = std::string("/proc/self/fd/") + std::to_string(root()) + "/" + PathOf(rel);
  if (::lgetxattr(p.c_str(), kDirAttr, v, sizeof v) == static_cast<ssize_t>(sizeof v)) {
    a = DirAttr{S_IFDIR | (v[0] & 07777), v[1], v[2]};
  }
  return a;
}

uint32_t SpillStoreImpl::DirOwner(const std::string& rel) {
  struct stat st {};
  if (::fstatat(root(), PathOf(rel).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  Result<DirAttr> a = ReadDirAttr(rel, st);
  return a.ok() ? a.value().uid : st.st_uid;
}

Status SpillStoreImpl::WriteDirAttr(const std::string& rel, const DirAttr& a) {
  const uint32_t v[3] = {a.mode, a.uid, a.gid};
  const std::string p = std::string("/proc/self/fd/") + std::to_string(root()) + "/" + PathOf(rel);
  if (::lsetxattr(p.c_str(), kDirAttr, v, sizeof v, 0) != 0 && errno != ENOTSUP) {
    return StatusFromErrno(errno, "spill setxattr " + PathOf(rel));
  }
  return Status::Ok();
}

Result<SpillAttr> SpillStoreImpl::Stat(const std::string& rel) {
  std::shared_ptr<SpillFileImpl> f;
  {
    std::lock_guard ns(ns_mu_);
    auto it = files_.find(rel);
    if (it != files_.end()) f = it->second;
  }
  if (f) return f->Attr();
  struct stat st {};
  if (::fstatat(root(), PathOf(rel).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return StatusFromErrno(errno, "spill stat " + PathOf(rel));
  }
  SpillAttr a;
  a.blocks = static_cast<uint64_t>(st.st_blocks);
  a.nlink = static_cast<uint32_t>(st.st_nlink);
  a.ino = st.st_ino;
  a.atime = st.st_atim;
  a.mtime = st.st_mtim;
  a.ctime = st.st_ctim;
  if (S_ISDIR(st.st_mode)) {
    auto d = ReadDirAttr(rel, st);
    if (!d.ok()) return d.status();
    a.is_dir = true;
    a.size = static_cast<uint64_t>(st.st_size);
    a.mode = d.value().mode;
    a.uid = d.value().uid;
    a.gid = d.value().gid;
    return a;
  }
  if (!S_ISREG(st.st_mode)) return InvalidArgument("spill: " + rel + " is not a file");
  UniqueFd fd(::openat(root(), rel.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return StatusFromErrno(errno, "spill open " + rel);
  FileHeader h;
  bool empty = false;
  Status s = ReadHeaderBlock(fd.get(), &h, &empty);
  if (!s.ok()) return Status(s.code(), "spill file " + rel + ": " + s.message());
  if (empty) {
    a.mode = st.st_mode;
    a.uid = st.st_uid;
    a.gid = st.st_gid;
    return a;
  }
  a.size = h.size;
  a.mode = h.mode;
  a.uid = h.uid;
  a.gid = h.gid;
  a.mtime = h.mtime;
  return a;
}

Status SpillStoreImpl::Mkdir(const std::string& rel, uint32_t mode, uid_t uid, gid_t gid) {
  if (rel.empty()) return Status(Code::kExists, "spill: the root exists");
  std::lock_guard ns(ns_mu_);
  {
    std::lock_guard lock(core_->mu);
    if (Status room = core_->RoomForEntry(uid); !room.ok()) return room;
  }
  if (::mkdirat(root(), rel.c_str(), 0700) != 0) return StatusFromErrno(errno, "spill mkdir " + rel);
  Status s;
  if (core_->is_root() && (::fchownat(root(), rel.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0 ||
                           ::fchmodat(root(), rel.c_str(), mode & 0777, 0) != 0)) {
    s = StatusFromErrno(errno, "spill chown " + rel);
  }
  if (s.ok()) s = WriteDirAttr(rel, DirAttr{S_IFDIR | (mode & 07777), uid, gid});
  if (!s.ok()) {
    ::unlinkat(root(), rel.c_str(), AT_REMOVEDIR);
    return s;
  }
  std::lock_guard lock(core_->mu);
  core_->AddEntry(uid);
  return s;
}

Status SpillStoreImpl::Rmdir(const std::string& rel) {
  if (rel.empty()) return Status(Code::kBusy, "spill: cannot remove the root");
  std::lock_guard ns(ns_mu_);
  const uint32_t owner = DirOwner(rel);
  if (::unlinkat(root(), rel.c_str(), AT_REMOVEDIR) != 0) {
    const int err = errno == EEXIST ? ENOTEMPTY : errno;
    return StatusFromErrno(err, "spill rmdir " + rel);
  }
  std::lock_guard lock(core_->mu);
  core_->RemoveEntry(owner);
  return Status::Ok();
}

Status SpillStoreImpl::Unlink(const std::string& rel) {
  if (rel.empty()) return IsDirectory("spill: the root is a directory");
  std::shared_ptr<SpillFileImpl> f;
  {
    std::lock_guard ns(ns_mu_);
    struct stat st {};
    if (::fstatat(root(), rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return StatusFromErrno(errno, "spill unlink " + rel);
    }
    if (S_ISDIR(st.st_mode)) return IsDirectory("spill unlink " + rel + ": is a directory");
    auto it = files_.find(rel);
    const Owned o = it == files_.end() ? HeaderOwned(rel) : Owned{};
    if (::unlinkat(root(), rel.c_str(), 0) != 0) return StatusFromErrno(errno, "spill unlink " + rel);
    if (it != files_.end()) {
      f = std::move(it->second);
      files_.erase(it);
      std::lock_guard lock(core_->mu);
      f->MarkUnlinked();
    } else {
      std::lock_guard lock(core_->mu);
      core_->RemoveFile(o.uid, o.size);
    }
  }
  // `f` goes here: if nobody else holds it, its bytes leave the quota now.
  return Status::Ok();
}

Status SpillStoreImpl::Rename(const std::string& from, const std::string& to, bool noreplace) {
  if (from.empty() || to.empty()) return Status(Code::kBusy, "spill: cannot rename the root");
  std::shared_ptr<SpillFileImpl> replaced;
  {
    std::lock_guard ns(ns_mu_);
    struct stat sf {}, stt {};
    if (::fstatat(root(), from.c_str(), &sf, AT_SYMLINK_NOFOLLOW) != 0) {
      return StatusFromErrno(errno, "spill rename " + from);
    }
    const bool to_exists = ::fstatat(root(), to.c_str(), &stt, AT_SYMLINK_NOFOLLOW) == 0;
    if (to_exists && sf.st_ino == stt.st_ino && sf.st_dev == stt.st_dev) {
      return noreplace ? Status(Code::kExists, "spill rename: " + to + " exists") : Status::Ok();
    }
    const bool replaces_file = to_exists && S_ISREG(stt.st_mode);
    // An empty directory replaced by a directory goes with the rename.
    const bool replaces_dir = to_exists && S_ISDIR(stt.st_mode);
    const uint32_t replaced_dir_owner = replaces_dir ? DirOwner(to) : 0;
    auto to_it = files_.find(to);
    const Owned to_old = replaces_file && to_it == files_.end() ? HeaderOwned(to) : Owned{};
    if (::renameat2(root(), from.c_str(), root(), to.c_str(), noreplace ? RENAME_NOREPLACE : 0) != 0) {
      return StatusFromErrno(errno, "spill rename " + from + " -> " + to);
    }
    std::lock_guard lock(core_->mu);
    if (replaces_dir) core_->RemoveEntry(replaced_dir_owner);
    if (replaces_file) {
      if (to_it != files_.end()) {
        replaced = std::move(to_it->second);
        files_.erase(to_it);
        replaced->MarkUnlinked();
      } else {
        core_->RemoveFile(to_old.uid, to_old.size);
      }
    }
    // Open files follow: `from` itself, or everything under the directory `from`.
    std::vector<std::pair<std::string, std::shared_ptr<SpillFileImpl>>> moved;
    const std::string prefix = from + "/";
    for (auto it = files_.begin(); it != files_.end();) {
      if (it->first == from || it->first.compare(0, prefix.size(), prefix) == 0) {
        moved.emplace_back(to + it->first.substr(from.size()), std::move(it->second));
        it = files_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [name, f] : moved) {
      f->SetRel(name);
      f->NeedDirSync();
      files_[name] = std::move(f);
    }
  }
  return Status::Ok();
}

// Chmod and Chown: a directory's attributes are in its xattr (`on_dir`
// changes them, and as root the directory's own), a file's in its header
// (`on_file`). `what` names the operation in errors ("spill chmod REL").
template <class OnDir, class OnFile>
Status SpillStoreImpl::ChangeAttr(const std::string& rel, const std::string& what, OnDir on_dir,
                                  OnFile on_file) {
  std::shared_ptr<SpillFileImpl> f;
  {
    std::lock_guard ns(ns_mu_);
    struct stat st {};
    if (::fstatat(root(), PathOf(rel).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return StatusFromErrno(errno, what);
    }
    if (S_ISDIR(st.st_mode)) {
      auto d = ReadDirAttr(rel, st);
      if (!d.ok()) return d.status();
      DirAttr a = d.value();
      if (Status s = on_dir(&a); !s.ok()) return s;
      return WriteDirAttr(rel, a);
    }
    auto r = OpenLocked(rel, false, false, 0, 0, 0);
    if (!r.ok()) return r.status();
    f = std::move(r).value();
  }
  return on_file(*f);
}

Status SpillStoreImpl::Chmod(const std::string& rel, uint32_t mode) {
  const std::string what = "spill chmod " + PathOf(rel);
  return ChangeAttr(
      rel, what,
      [&](DirAttr* a) {
        a->mode = S_IFDIR | (mode & 07777);
        if (core_->is_root() && ::fchmodat(root(), PathOf(rel).c_str(), mode & 0777, 0) != 0) {
          return StatusFromErrno(errno, what);
        }
        return Status::Ok();
      },
      [&](SpillFileImpl& f) { return f.SetMode(mode); });
}

Status SpillStoreImpl::Chown(const std::string& rel, uid_t uid, gid_t gid) {
  const std::string what = "spill chown " + PathOf(rel);
  return ChangeAttr(
      rel, what,
      [&](DirAttr* a) {
        if (uid != static_cast<uid_t>(-1) && uid != a->uid) {
          std::lock_guard lock(core_->mu);
          core_->RemoveEntry(a->uid);
          core_->AddEntry(uid);
        }
        if (uid != static_cast<uid_t>(-1)) a->uid = uid;
        if (gid != static_cast<gid_t>(-1)) a->gid = gid;
        if (core_->is_root() &&
            ::fchownat(root(), PathOf(rel).c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0) {
          return StatusFromErrno(errno, what);
        }
        return Status::Ok();
      },
      [&](SpillFileImpl& f) { return f.SetOwner(uid, gid); });
}

Result<std::vector<SpillDirEntry>> SpillStoreImpl::List(const std::string& rel) {
  int dfd = ::openat(root(), PathOf(rel).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return StatusFromErrno(errno, "spill list " + PathOf(rel));
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    ::close(dfd);
    return StatusFromErrno(errno, "spill list " + PathOf(rel));
  }
  std::vector<SpillDirEntry> out;
  while (struct dirent* de = ::readdir(d)) {
    const std::string name = de->d_name;
    if (name == "." || name == "..") continue;
    bool is_dir = de->d_type == DT_DIR;
    if (de->d_type == DT_UNKNOWN) {
      struct stat st {};
      if (::fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      is_dir = S_ISDIR(st.st_mode);
    }
    out.push_back({name, is_dir});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(),
            [](const SpillDirEntry& a, const SpillDirEntry& b) { return a.name < b.name; });
  return out;
}

Status SpillStoreImpl::Prefetch(const std::string& rel) {
  std::shared_ptr<SpillFileImpl> f;
  {
    std::lock_guard ns(ns_mu_);
    auto r = OpenLocked(rel, false, false, 0, 0, 0);
    if (!r.ok()) return r.status();
    f = std::move(r).value();
  }
  return f->Prefetch();
}

Status SpillStoreImpl::WriteOut(const std::string& rel) {
  std::shared_ptr<SpillFileImpl> f;
  {
    std::lock_guard ns(ns_mu_);
    auto it = files_.find(rel);
    if (it == files_.end()) {
      // Not open: nothing staged; only say whether it exists.
      struct stat st {};
      if (::fstatat(root(), PathOf(rel).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return StatusFromErrno(errno, "spill writeout " + PathOf(rel));
      }
      return S_ISDIR(st.st_mode) ? IsDirectory("spill writeout " + PathOf(rel)) : Status::Ok();
    }
    f = it->second;
  }
  return f->WriteOut();
}

bool SpillStoreImpl::Resident(const std::string& rel) {
  std::shared_ptr<SpillFileImpl> f;
  {
    std::lock_guard ns(ns_mu_);
    auto it = files_.find(rel);
    if (it != files_.end()) f = it->second;
  }
  if (f) return f->Resident();
  auto a = Stat(rel);  // not open: nothing staged
  return a.ok() && !a.value().is_dir && a.value().size == 0;
}

Status SpillStoreImpl::SyncAll() {
  std::vector<std::shared_ptr<SpillFileImpl>> files;
  {
    std::lock_guard ns(ns_mu_);
    for (auto& [name, f] : files_) files.push_back(f);
  }
  Status first;
  for (auto& f : files) {
    Status s = f->Sync();
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

}  // namespace epochfs::spill
