// The control tree's virtual files (control_view.h).
#include "control_view.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "epochfs/common/log.h"

namespace epochfs::fs {
namespace {

// The caller with their supplementary groups: those of the calling process
// (FUSE reads them from /proc), else, when that fails (the process is gone,
// or in another pid namespace: pid 0), the groups the user database gives
// the uid; none when it has no entry. Taken where a job's owner is recorded
// (a job's samples are checked and loaded as its owner reaches LOWER).
control::Caller CallerWithGroups(fuse_req_t req) {
  control::Caller who = CallerOf(req);
  std::vector<gid_t> groups(64);
  int n = fuse_req_getgroups(req, static_cast<int>(groups.size()), groups.data());
  if (n > static_cast<int>(groups.size())) {
    groups.resize(static_cast<size_t>(n));
    n = fuse_req_getgroups(req, static_cast<int>(groups.size()), groups.data());
  }
  if (n >= 0 && n <= static_cast<int>(groups.size())) {
    groups.resize(static_cast<size_t>(n));
    who.groups = std::move(groups);
    return who;
  }
  struct passwd pw;
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(who.uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return who;
  }
  int count = 64;
  groups.assign(static_cast<size_t>(count), 0);
  if (::getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &count) < 0) {
    groups.assign(static_cast<size_t>(count), 0);  // count now says how many there are
    if (::getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &count) < 0) return who;
  }
  groups.resize(static_cast<size_t>(count));
  who.groups = std::move(groups);
  return who;
}

}  // namespace

ControlView::ControlView(const FsContext& ctx, control::ControlPlane& control)
    : ctx_(ctx),
      control_(control),
      start_time_(::time(nullptr)),
      budget_(ctx.cfg.limits.control_files_per_user, ctx.cfg.limits.control_bytes_per_user) {}

struct stat ControlView::VirtualAttr(fuse_ino_t ino, const control::VNode& v) const {
  struct stat st {};
  st.st_ino = ino;
  const mode_t perm = v.perm != 0 ? v.perm : v.is_dir ? 0755 : v.writable ? 0644 : 0444;
  st.st_mode = (v.is_dir ? S_IFDIR : S_IFREG) | perm;
  st.st_nlink = v.is_dir ? 2 : 1;
  st.st_uid = v.uid;
  st.st_gid = v.gid;
  st.st_size = 0;  // contents are dynamic; served with direct_io
  st.st_blksize = 4096;
  st.st_atim.tv_sec = st.st_mtim.tv_sec = st.st_ctim.tv_sec = start_time_;
  return st;
}

// Of the daemon's user when they are the nested sessions' mountpoints, which
// fusermount3 mounts for a user other than root only on a directory the user
// may write (nested_mount.h); else root's.
control::VNode ControlView::MountDirNode() const {
  control::VNode v{true, false, 0, 0};
  if (ctx_.role == Role::kDataset) {
    v.uid = ::geteuid();
    v.gid = ::getegid();
  }
  return v;
}

NodeView ControlView::MountDir(const std::string& path) {
  NodeView v = ctx_.inodes.Ref(NodeKind::kVirtual, path, {});
  v.st = VirtualAttr(v.ino, MountDirNode());
  return v;
}

Result<NodeView> ControlView::LookupChild(fuse_req_t req, const NodeView& parent,
                                          const char* name) {
  // The dataset session's `.epochfs` is an empty directory: the control
  // session is mounted on it.
  if (parent.detached || ctx_.role == Role::kDataset) return NotFound("removed");
  const control::Caller who = CallerOf(req);
  std::string path = control_.Resolve(Join(parent.path, name), who);
  auto vn = control_.Stat(path, who);
  if (!vn.ok()) return vn.status();
  NodeView v = ctx_.inodes.Ref(NodeKind::kVirtual, path, {});
  v.st = VirtualAttr(v.ino, vn.value());
  return v;
}

void ControlView::GetAttr(fuse_req_t req, fuse_ino_t ino, const NodeView& v) {
  if (v.detached) return (void)reply::Err(req, ENOENT);
  if (ctx_.role == Role::kDataset) {  // the other sessions' mountpoints
    struct stat st = VirtualAttr(ino, MountDirNode());
    return (void)reply::Attr(req, &st, 0.0);
  }
  auto vn = control_.Stat(v.path, CallerOf(req));
  if (!vn.ok()) return (void)reply::Err(req, ToErrno(vn.status()));
  struct stat st = VirtualAttr(ino, vn.value());
  reply::Attr(req, &st, 0.0);
}

int ControlView::FillListing(fuse_req_t req, const NodeView& v, OpenDir& dir) {
  const control::Caller who = CallerOf(req);
  auto names = control_.List(v.path, who);
  if (!names.ok()) return ToErrno(names.status());
  for (const std::string& n : names.value()) {
    std::string path = control_.Resolve(Join(v.path, n), who);
    auto vn = control_.Stat(path, who);
    if (!vn.ok()) continue;
    dir.AddWithAttrs(n, VirtualAttr(0, vn.value()), NodeKind::kVirtual, std::move(path));
  }
  return 0;
}

void ControlView::Open(fuse_req_t req, const NodeView& v, fuse_file_info* fi, int acc) {
  if (v.detached) return (void)reply::Err(req, ENOENT);
  auto vn = control_.Stat(v.path, CallerOf(req));
  if (!vn.ok()) return (void)reply::Err(req, ToErrno(vn.status()));
  if (vn.value().is_dir) return (void)reply::Err(req, EISDIR);
  auto file = std::make_shared<OpenFile>();
  file->path = v.path;
  if (acc == O_RDONLY) {
    auto content = control_.Read(v.path, CallerOf(req));
    if (!content.ok()) return (void)reply::Err(req, ToErrno(content.status()));
    file->kind = OpenFile::Kind::kVirtualRead;
    file->content = std::move(content).value();
  } else {
    const control::Caller who = CallerOf(req);
    Status may = control_.CheckWrite(v.path, who);
    if (!may.ok()) return (void)reply::Err(req, ToErrno(may));
    if (int err = budget_.Open(who.uid)) return (void)reply::Err(req, err);
    file->writer = who.uid;
    // A control write is the whole of what this open writes: nothing is
    // preloaded, so `>>` appends exactly its new lines (pids) and O_APPEND
    // at offset 0 cannot overwrite anything.
    file->kind = OpenFile::Kind::kVirtualWrite;
    // With O_APPEND the kernel sends its cached file size as the offset,
    // which other writers of the same file raise: append to this open's
    // buffer instead, whatever the offset.
    file->append = (fi->flags & O_APPEND) != 0;
    file->per_write = vn.value().per_write;
  }
  fi->fh = ctx_.files.Add(std::move(file));
  fi->direct_io = 1;
  fi->nonseekable = 0;
  reply::Open(req, fi);
}

void ControlView::Read(fuse_req_t req, OpenFile& f, size_t size, off_t off) {
  const auto slice = [&](const char* data, size_t len) {
    if (static_cast<uint64_t>(off) >= len) return (void)reply::Buf(req, nullptr, 0);
    size_t n = std::min(size, len - static_cast<size_t>(off));
    reply::Buf(req, data + off, n);
  };
  if (f.kind == OpenFile::Kind::kVirtualRead) return slice(f.content.data(), f.content.size());
  std::lock_guard lock(f.mu);
  slice(f.content.data(), f.content.size());
}

void ControlView::Write(fuse_req_t req, OpenFile& f, const char* buf, size_t size, off_t off) {
  constexpr size_t kMaxPerWrite = 4096;  // one report (VNode::per_write)
  constexpr size_t kMaxControlFile = 64u << 20;
  std::lock_guard lock(f.mu);
  if (f.per_write) {  // a report: taken now, whatever the offset; nothing kept
    if (size > kMaxPerWrite) return (void)reply::Err(req, EFBIG);
    Status s = control_.Write(f.path, std::string(buf, size), CallerOf(req));
    if (!s.ok()) return (void)reply::Err(req, ToErrno(s));
    return (void)reply::Write(req, size);
  }
  if (f.append) off = static_cast<off_t>(f.content.size());
  if (off < 0 || static_cast<uint64_t>(off) + size > kMaxControlFile) {
    return (void)reply::Err(req, EFBIG);
  }
  // Control files are text written front to back: a write past the end
  // (a hole) is refused, so a 1-byte pwrite cannot make the daemon hold
  // megabytes of zeros.
  if (static_cast<size_t>(off) > f.content.size()) return (void)reply::Err(req, EINVAL);
  const size_t end = static_cast<size_t>(off) + size;
  if (end > f.content.size()) {
    if (!budget_.Grow(f.writer, end - f.content.size())) return (void)reply::Err(req, EDQUOT);
    f.content.resize(end);
  }
  std::memcpy(f.content.data() + off, buf, size);
  f.dirty = true;
  reply::Write(req, size);
}

void ControlView::Flush(fuse_req_t req, OpenFile& f) {
  std::lock_guard lock(f.mu);
  if (!f.dirty) return (void)reply::Err(req, 0);
  f.dirty = false;
  Status s = control_.Write(f.path, f.content, CallerWithGroups(req));
  reply::Err(req, ToErrno(s));
}

void ControlView::Release(OpenFile& f) {
  std::lock_guard lock(f.mu);
  budget_.Close(f.writer, f.content.size());
}

int ControlView::VirtualParent(fuse_ino_t parent, const char* name, NodeView* dir) {
  auto p = ctx_.inodes.Get(parent);
  if (!p) return ESTALE;
  if (p->kind != NodeKind::kVirtual) return EROFS;
  if (p->detached) return ENOENT;
  if (!ValidName(name)) return EINVAL;
  *dir = std::move(*p);
  return 0;
}

void ControlView::Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  NodeView dir;
  if (int err = VirtualParent(parent, name, &dir)) return (void)reply::Err(req, err);
  const control::Caller who = CallerWithGroups(req);
  Status s = control_.Mkdir(control_.Resolve(Join(dir.path, name), who), who);
  if (!s.ok()) return (void)reply::Err(req, ToErrno(s));
  auto child = LookupChild(req, dir, name);
  if (!child.ok()) return (void)reply::Err(req, ToErrno(child.status()));
  ReplyEntry(req, child.value(), 0.0, 0.0);
}

void ControlView::Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  NodeView dir;
  if (int err = VirtualParent(parent, name, &dir)) return (void)reply::Err(req, err);
  const control::Caller who = CallerOf(req);
  const std::string path = control_.Resolve(Join(dir.path, name), who);
  Status s = control_.Rmdir(path, who);
  if (s.ok()) ctx_.inodes.DetachTree(NodeKind::kVirtual, path);
  reply::Err(req, ToErrno(s));
}

void ControlView::EntryRemoved(fuse_session* se, const std::string& control_path) {
  const size_t slash = control_path.rfind('/');
  const std::string parent = slash == std::string::npos ? "" : control_path.substr(0, slash);
  const std::string name =
      slash == std::string::npos ? control_path : control_path.substr(slash + 1);
  const fuse_ino_t parent_ino = ctx_.inodes.Peek(NodeKind::kVirtual, parent);
  if (parent_ino == 0) return;  // the kernel has no entry under it
  const fuse_ino_t ino = ctx_.inodes.Peek(NodeKind::kVirtual, control_path);
  ctx_.inodes.DetachTree(NodeKind::kVirtual, control_path);
  int rc = ino != 0 ? fuse_lowlevel_notify_delete(se, parent_ino, ino, name.data(), name.size())
                    : fuse_lowlevel_notify_inval_entry(se, parent_ino, name.data(), name.size());
  if (rc != 0 && rc != -ENOENT) {
    log::Debug("cannot drop the kernel's entry " + control_path + ": " + std::strerror(-rc));
  }
  // A user's job NAME@UID is NAME in the kernel's entries of that user's
  // lookups (common/user_key.h): drop that entry too.
  if (const size_t at = name.rfind('@'); at != std::string::npos && at > 0) {
    fuse_lowlevel_notify_inval_entry(se, parent_ino, name.data(), at);
  }
}

}  // namespace epochfs::fs
