#include "spill_fs.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <climits>
#include <cstring>
#include <span>
#include <vector>

#include "epochfs/common/user_key.h"
#include "errno_map.h"

namespace epochfs::fs {
namespace {

// Permission bits a spill entry may carry: the owner's only.
constexpr mode_t kOwnerBits = 0700;

bool ValidSpillName(const char* name) {
  size_t n = std::strlen(name);
  if (n == 0 || n > NAME_MAX) return false;
  if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) return false;
  return std::strchr(name, '/') == nullptr;
}

// The store path of `name` in `dir` as the caller `uid` names it: names at
// the top of the area are per user (common/user_key.h).
std::string Join(const std::string& dir, const char* name, uid_t uid) {
  return dir.empty() ? UserKey(name, uid) : dir + "/" + name;
}

uid_t CallerUid(fuse_req_t req) { return fuse_req_ctx(req)->uid; }

bool IsRoot(fuse_req_t req) { return fuse_req_ctx(req)->uid == 0; }

}  // namespace

struct stat SpillFs::ToStat(fuse_ino_t ino, const spill::SpillAttr& a) const {
  struct stat st {};
  st.st_ino = ino;
  st.st_mode = a.mode;
  st.st_nlink = a.nlink;
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_size = static_cast<off_t>(a.size);
  st.st_blocks = static_cast<blkcnt_t>(a.blocks);
  st.st_blksize = 1 << 20;  // writes of 1 MiB reach the store whole
  st.st_atim = a.atime;
  st.st_mtim = a.mtime;
  st.st_ctim = a.ctime;
  return st;
}

struct stat SpillFs::RootAttr() const {
  struct stat st {};
  auto a = store_.Stat("");
  if (a.ok()) st = ToStat(0, a.value());
  st.st_mode = S_IFDIR | 01777;
  st.st_uid = 0;
  st.st_gid = 0;
  st.st_nlink = 2;
  return st;
}

int SpillFs::MayTouch(fuse_req_t req, const spill::SpillAttr& attr) {
  const fuse_ctx* c = fuse_req_ctx(req);
  return c->uid == 0 || c->uid == attr.uid ? 0 : EACCES;
}

int SpillFs::MayChangeDir(fuse_req_t req, const NodeView& dir) {
  if (dir.detached) return ENOENT;
  if (dir.path.empty()) return 0;  // the root is 1777
  auto a = store_.Stat(dir.path);
  if (!a.ok()) return ToErrno(a.status());
  if (!a.value().is_dir) return ENOTDIR;
  return MayTouch(req, a.value());
}

void SpillFs::ReplyEntry(fuse_req_t req, const std::string& path, const spill::SpillAttr& a) {
  NodeView v = inodes_.Ref(NodeKind::kSpill, path, {});
  fuse_entry_param e {};
  e.ino = v.ino;
  e.generation = v.generation;
  e.attr = ToStat(v.ino, a);
  e.attr_timeout = 0.0;
  e.entry_timeout = 0.0;
  reply::Entry(req, &e);
}

void SpillFs::LookupRoot(fuse_req_t req) {
  NodeView v = inodes_.Ref(NodeKind::kSpill, "", {});
  fuse_entry_param e {};
  e.ino = v.ino;
  e.generation = v.generation;
  e.attr = RootAttr();
  e.attr.st_ino = v.ino;
  reply::Entry(req, &e);
}

void SpillFs::Lookup(fuse_req_t req, const NodeView& parent, const char* name) {
  if (!ValidSpillName(name)) return (void)reply::Err(req, std::strlen(name) > NAME_MAX ? ENAMETOOLONG : ENOENT);
  if (parent.detached) return (void)reply::Err(req, ENOENT);
  const std::string path = Join(parent.path, name, CallerUid(req));
  auto a = store_.Stat(path);
  if (!a.ok()) return (void)reply::Err(req, ToErrno(a.status()));
  // Another user's top-level entry is not there for this caller.
  if (parent.path.empty() && MayTouch(req, a.value()) != 0) {
    return (void)reply::Err(req, ENOENT);
  }
  ReplyEntry(req, path, a.value());
}

void SpillFs::GetAttr(fuse_req_t req, const NodeView& v, fuse_file_info* fi) {
  if (v.path.empty() && !v.detached) {
    struct stat st = RootAttr();
    st.st_ino = v.ino;
    return (void)reply::Attr(req, &st, 0.0);
  }
  std::shared_ptr<OpenFile> f = fi != nullptr ? files_.Get(fi->fh) : nullptr;
  if (v.detached) {
    // Removed but still open: what the handle knows.
    if (f == nullptr || f->kind != OpenFile::Kind::kSpill) return (void)reply::Err(req, ENOENT);
    struct stat st {};
    st.st_ino = v.ino;
    st.st_mode = S_IFREG | 0600;
    st.st_uid = fuse_req_ctx(req)->uid;
    st.st_size = static_cast<off_t>(f->spill->size());
    return (void)reply::Attr(req, &st, 0.0);
  }
  auto a = store_.Stat(v.path);
  if (!a.ok()) return (void)reply::Err(req, ToErrno(a.status()));
  struct stat st = ToStat(v.ino, a.value());
  if (f != nullptr && f->kind == OpenFile::Kind::kSpill) st.st_size = static_cast<off_t>(f->spill->size());
  reply::Attr(req, &st, 0.0);
}

void SpillFs::SetAttr(fuse_req_t req, const NodeView& v, struct stat* attr, int to_set,
                      fuse_file_info* fi) {
  if (v.path.empty()) return (void)reply::Err(req, EPERM);  // the root is fixed
  if (v.detached) return (void)reply::Err(req, ENOENT);
  auto a = store_.Stat(v.path);
  if (!a.ok()) return (void)reply::Err(req, ToErrno(a.status()));
  if (int err = MayTouch(req, a.value())) return (void)reply::Err(req, err);
  if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
    if (!IsRoot(req)) return (void)reply::Err(req, EPERM);
    const uid_t uid = (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : a.value().uid;
    const gid_t gid = (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : a.value().gid;
    if (Status s = store_.Chown(v.path, uid, gid); !s.ok()) return (void)reply::Err(req, ToErrno(s));
  }
  if (to_set & FUSE_SET_ATTR_MODE) {
    if (Status s = store_.Chmod(v.path, attr->st_mode & kOwnerBits); !s.ok()) {
      return (void)reply::Err(req, ToErrno(s));
    }
  }
  std::shared_ptr<OpenFile> f = fi != nullptr ? files_.Get(fi->fh) : nullptr;
  if (to_set & FUSE_SET_ATTR_SIZE) {
    if (a.value().is_dir) return (void)reply::Err(req, EISDIR);
    std::shared_ptr<spill::SpillFile> file;
    if (f != nullptr && f->kind == OpenFile::Kind::kSpill) {
      file = f->spill;
    } else {
      auto opened = store_.OpenFile(v.path, false, false, false, 0, 0, 0);
      if (!opened.ok()) return (void)reply::Err(req, ToErrno(opened.status()));
      file = std::move(opened).value();
    }
    if (Status s = file->Truncate(static_cast<uint64_t>(attr->st_size)); !s.ok()) {
      return (void)reply::Err(req, ToErrno(s));
    }
  }
  // Times are accepted and not kept: spill files carry the SSD file's times.
  GetAttr(req, v, fi);
}

void SpillFs::OpenDirectory(fuse_req_t req, const NodeView& v, fuse_file_info* fi) {
  if (v.detached) return (void)reply::Err(req, ENOENT);
  if (!v.path.empty()) {
    auto a = store_.Stat(v.path);
    if (!a.ok()) return (void)reply::Err(req, ToErrno(a.status()));
    if (int err = MayTouch(req, a.value())) return (void)reply::Err(req, err);
  }
  auto list = store_.List(v.path);
  if (!list.ok()) return (void)reply::Err(req, ToErrno(list.status()));
  auto dir = std::make_shared<OpenDir>();
  for (spill::SpillDirEntry& e : list.value()) {
    std::string path = v.path.empty() ? e.name : v.path + "/" + e.name;
    auto a = store_.Stat(path);
    if (!a.ok()) continue;  // removed meanwhile
    if (v.path.empty() && MayTouch(req, a.value()) != 0) continue;  // another user's
    std::string shown = v.path.empty() ? std::string(VisibleName(e.name, CallerUid(req))) : e.name;
    dir->AddWithAttrs(std::move(shown), ToStat(0, a.value()), NodeKind::kSpill, std::move(path));
  }
  fi->fh = dirs_.Add(std::move(dir));
  fi->cache_readdir = 0;
  fi->keep_cache = 0;
  reply::Open(req, fi);
}

void SpillFs::Open(fuse_req_t req, const NodeView& v, fuse_file_info* fi) {
  if (v.detached) return (void)reply::Err(req, ENOENT);
  if (v.path.empty()) return (void)reply::Err(req, EISDIR);
  auto a = store_.Stat(v.path);
  if (!a.ok()) return (void)reply::Err(req, ToErrno(a.status()));
  if (int err = MayTouch(req, a.value())) return (void)reply::Err(req, err);
  if (a.value().is_dir) return (void)reply::Err(req, EISDIR);
  const bool trunc = (fi->flags & O_TRUNC) != 0 && (fi->flags & O_ACCMODE) != O_RDONLY;
  const uid_t uid = fuse_req_ctx(req)->uid;
  if (int err = budget_.Open(uid)) return (void)reply::Err(req, err);
  auto file = store_.OpenFile(v.path, false, false, trunc, 0, 0, 0);
  if (!file.ok()) {
    budget_.Close(uid, 0);
    return (void)reply::Err(req, ToErrno(file.status()));
  }
  auto of = std::make_shared<OpenFile>();
  of->kind = OpenFile::Kind::kSpill;
  of->writer = uid;
  of->spill = std::move(file).value();
  of->append = (fi->flags & O_APPEND) != 0;
  fi->fh = files_.Add(std::move(of));
  fi->direct_io = 1;
  fi->keep_cache = 0;
  reply::Open(req, fi);
}

void SpillFs::Create(fuse_req_t req, const NodeView& parent, const char* name, mode_t mode,
                     fuse_file_info* fi) {
  if (!ValidSpillName(name)) return (void)reply::Err(req, std::strlen(name) > NAME_MAX ? ENAMETOOLONG : EINVAL);
  if (!S_ISREG(mode) && (mode & S_IFMT) != 0) return (void)reply::Err(req, EPERM);
  if (int err = MayChangeDir(req, parent)) return (void)reply::Err(req, err);
  const std::string path = Join(parent.path, name, CallerUid(req));
  const fuse_ctx* c = fuse_req_ctx(req);
  // An existing file: O_CREAT without O_EXCL opens it, if it is the caller's.
  if (auto existing = store_.Stat(path); existing.ok()) {
    if ((fi->flags & O_EXCL) != 0) return (void)reply::Err(req, EEXIST);
    if (int err = MayTouch(req, existing.value())) return (void)reply::Err(req, err);
    if (existing.value().is_dir) return (void)reply::Err(req, EISDIR);
  }
  const bool trunc = (fi->flags & O_TRUNC) != 0;
  if (int err = budget_.Open(c->uid)) return (void)reply::Err(req, err);
  auto file = store_.OpenFile(path, true, (fi->flags & O_EXCL) != 0, trunc,
                              S_IFREG | (mode & kOwnerBits), c->uid, c->gid);
  auto a = file.ok() ? store_.Stat(path) : Result<spill::SpillAttr>(file.status());
  if (!a.ok()) {
    budget_.Close(c->uid, 0);
    return (void)reply::Err(req, ToErrno(a.status()));
  }
  auto of = std::make_shared<OpenFile>();
  of->kind = OpenFile::Kind::kSpill;
  of->writer = c->uid;
  of->spill = std::move(file).value();
  of->append = (fi->flags & O_APPEND) != 0;
  NodeView v = inodes_.Ref(NodeKind::kSpill, path, {});
  fuse_entry_param e {};
  e.ino = v.ino;
  e.generation = v.generation;
  e.attr = ToStat(v.ino, a.value());
  fi->fh = files_.Add(std::move(of));
  fi->direct_io = 1;
  fi->keep_cache = 0;
  if (reply::Create(req, &e, fi) != 0) {
    // The caller went away: undo the handle and the lookup.
    files_.Remove(fi->fh);
    budget_.Close(c->uid, 0);
    inodes_.Forget(v.ino, 1);
  }
}

void SpillFs::Read(fuse_req_t req, OpenFile& f, size_t size, off_t off) {
  // The reply is written to /dev/fuse straight from the staged chunks (the
  // kernel copies them into the reader's pages): no copy of our own.
  Status s = f.spill->ReadPieces(static_cast<uint64_t>(off), size,
                                 [req](std::span<const struct iovec> pieces) {
                                   if (pieces.empty()) return (void)reply::Buf(req, nullptr, 0);
                                   reply::Iov(req, pieces.data(), static_cast<int>(pieces.size()));
                                 });
  if (!s.ok()) reply::Err(req, ToErrno(s));
}

void SpillFs::Write(fuse_req_t req, OpenFile& f, const char* buf, size_t size, off_t off) {
  uint64_t at = static_cast<uint64_t>(off);
  if (f.append) at = f.spill->size();
  auto n = f.spill->Write(at, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(buf), size));
  if (!n.ok()) return (void)reply::Err(req, ToErrno(n.status()));
  reply::Write(req, n.value());
}

void SpillFs::Fsync(fuse_req_t req, OpenFile& f) {
  reply::Err(req, ToErrno(f.spill->Sync()));
}

void SpillFs::Mkdir(fuse_req_t req, const NodeView& parent, const char* name, mode_t mode) {
  if (!ValidSpillName(name)) return (void)reply::Err(req, std::strlen(name) > NAME_MAX ? ENAMETOOLONG : EINVAL);
  if (int err = MayChangeDir(req, parent)) return (void)reply::Err(req, err);
  const std::string path = Join(parent.path, name, CallerUid(req));
  const fuse_ctx* c = fuse_req_ctx(req);
  if (Status s = store_.Mkdir(path, S_IFDIR | (mode & kOwnerBits), c->uid, c->gid); !s.ok()) {
    return (void)reply::Err(req, ToErrno(s));
  }
  auto a = store_.Stat(path);
  if (!a.ok()) return (void)reply::Err(req, ToErrno(a.status()));
  ReplyEntry(req, path, a.value());
}

void SpillFs::Rmdir(fuse_req_t req, const NodeView& parent, const char* name) {
  if (!ValidSpillName(name)) return (void)reply::Err(req, EINVAL);
  if (int err = MayChangeDir(req, parent)) return (void)reply::Err(req, err);
  const std::string path = Join(parent.path, name, CallerUid(req));
  auto a = store_.Stat(path);
  if (!a.ok()) return (void)reply::Err(req, ToErrno(a.status()));
  if (int err = MayTouch(req, a.value())) return (void)reply::Err(req, err);
  if (!a.value().is_dir) return (void)reply::Err(req, ENOTDIR);
  if (Status s = store_.Rmdir(path); !s.ok()) return (void)reply::Err(req, ToErrno(s));
  inodes_.Detach(NodeKind::kSpill, path);
  reply::Err(req, 0);
}

void SpillFs::Unlink(fuse_req_t req, const NodeView& parent, const char* name) {
  if (!ValidSpillName(name)) return (void)reply::Err(req, EINVAL);
  if (int err = MayChangeDir(req, parent)) return (void)reply::Err(req, err);
  const std::string path = Join(parent.path, name, CallerUid(req));
  auto a = store_.Stat(path);
  if (!a.ok()) return (void)reply::Err(req, ToErrno(a.status()));
  if (int err = MayTouch(req, a.value())) return (void)reply::Err(req, err);
  if (a.value().is_dir) return (void)reply::Err(req, EISDIR);
  if (Status s = store_.Unlink(path); !s.ok()) return (void)reply::Err(req, ToErrno(s));
  inodes_.Detach(NodeKind::kSpill, path);
  reply::Err(req, 0);
}

void SpillFs::Rename(fuse_req_t req, const NodeView& parent, const char* name,
                     const NodeView& newparent, const char* newname, unsigned int flags) {
  if (!ValidSpillName(name) || !ValidSpillName(newname)) return (void)reply::Err(req, EINVAL);
  if ((flags & ~static_cast<unsigned>(RENAME_NOREPLACE)) != 0) return (void)reply::Err(req, EINVAL);
  if (int err = MayChangeDir(req, parent)) return (void)reply::Err(req, err);
  if (int err = MayChangeDir(req, newparent)) return (void)reply::Err(req, err);
  const std::string from = Join(parent.path, name, CallerUid(req));
  const std::string to = Join(newparent.path, newname, CallerUid(req));
  auto a = store_.Stat(from);
  if (!a.ok()) return (void)reply::Err(req, ToErrno(a.status()));
  if (int err = MayTouch(req, a.value())) return (void)reply::Err(req, err);
  if (from == to) return (void)reply::Err(req, 0);
  // A directory cannot move below itself.
  if (a.value().is_dir && to.compare(0, from.size() + 1, from + "/") == 0) {
    return (void)reply::Err(req, EINVAL);
  }
  if (auto target = store_.Stat(to); target.ok()) {
    if (flags & RENAME_NOREPLACE) return (void)reply::Err(req, EEXIST);
    if (int err = MayTouch(req, target.value())) return (void)reply::Err(req, err);
    if (target.value().is_dir != a.value().is_dir) {
      return (void)reply::Err(req, a.value().is_dir ? ENOTDIR : EISDIR);
    }
  }
  if (Status s = store_.Rename(from, to, (flags & RENAME_NOREPLACE) != 0); !s.ok()) {
    return (void)reply::Err(req, ToErrno(s));
  }
  inodes_.Rename(NodeKind::kSpill, from, to);
  reply::Err(req, 0);
}

}  // namespace epochfs::fs
