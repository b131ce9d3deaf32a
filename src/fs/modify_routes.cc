// The modifying ops of a session (router.h): routed to the spill area
// (spill_fs.h) or the control tree (control_view.h); everywhere else the
// dataset is read-only and they reply EROFS (EPERM or EOPNOTSUPP in the spill
// area for what it does not keep).
#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <cerrno>

#include "reply.h"
#include "router.h"

namespace epochfs::fs {

// The spill node `parent`, when it is one.
std::optional<NodeView> Router::SpillParent(fuse_ino_t parent) {
  if (!spill_) return std::nullopt;
  auto p = inodes_.Get(parent);
  if (!p || p->kind != NodeKind::kSpill) return std::nullopt;
  return p;
}

void Router::SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
                     fuse_file_info* fi) {
  auto& self = Self(req);
  auto v = self.inodes_.Get(ino);
  if (!v) return (void)reply::Err(req, ESTALE);
  if (v->kind == NodeKind::kSpill) return self.spill_->SetAttr(req, *v, attr, to_set, fi);
  // Truncating a control file to zero before writing it is allowed (shell
  // redirection without O_TRUNC support); nothing else changes attributes.
  if (v->kind == NodeKind::kVirtual && to_set == FUSE_SET_ATTR_SIZE && attr->st_size == 0) {
    return GetAttr(req, ino, fi);
  }
  reply::Err(req, EROFS);
}

void Router::Write(fuse_req_t req, fuse_ino_t /*ino*/, const char* buf, size_t size,
                   off_t off, fuse_file_info* fi) {
  auto& self = Self(req);
  std::shared_ptr<OpenFile> f = self.files_.Get(fi->fh);
  if (f != nullptr && f->kind == OpenFile::Kind::kSpill) {
    return self.spill_->Write(req, *f, buf, size, off);
  }
  if (f == nullptr || f->kind != OpenFile::Kind::kVirtualWrite) {
    return (void)reply::Err(req, EROFS);
  }
  self.control_.Write(req, *f, buf, size, off);
}

void Router::Flush(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
  auto& self = Self(req);
  // Without OPEN there is no FOPEN_NOFLUSH: ENOSYS, once, stops FLUSH on
  // this connection (nothing of the dataset is written).
  if (self.role_ == Role::kDataset) return (void)reply::Err(req, ENOSYS);
  std::shared_ptr<OpenFile> f = self.files_.Get(fi->fh);
  if (f == nullptr || f->kind != OpenFile::Kind::kVirtualWrite) {
    return (void)reply::Err(req, 0);
  }
  self.control_.Flush(req, *f);
}

void Router::Fsync(fuse_req_t req, fuse_ino_t /*ino*/, int /*datasync*/,
                   fuse_file_info* fi) {
  auto& self = Self(req);
  std::shared_ptr<OpenFile> f = self.files_.Get(fi->fh);
  if (f != nullptr && f->kind == OpenFile::Kind::kSpill) return self.spill_->Fsync(req, *f);
  reply::Err(req, 0);  // read-only and virtual files: nothing to make durable
}

void Router::FsyncDir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) { reply::Err(req, 0); }

// mkdir/rmdir: in the spill area, or inside the control tree.
void Router::MkDir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  auto& self = Self(req);
  if (auto sp = self.SpillParent(parent)) return self.spill_->Mkdir(req, *sp, name, mode);
  self.control_.Mkdir(req, parent, name);
}

void Router::RmDir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto& self = Self(req);
  if (auto sp = self.SpillParent(parent)) return self.spill_->Rmdir(req, *sp, name);
  self.control_.Rmdir(req, parent, name);
}

// Every other modifying operation: the dataset is read-only.
// In the spill area: regular files come through CREATE; devices, fifos,
// symlinks and hard links are not kept there (EPERM).
void Router::MkNod(fuse_req_t req, fuse_ino_t parent, const char*, mode_t, dev_t) {
  reply::Err(req, Self(req).SpillParent(parent) ? EPERM : EROFS);
}

void Router::Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto& self = Self(req);
  if (auto sp = self.SpillParent(parent)) return self.spill_->Unlink(req, *sp, name);
  reply::Err(req, EROFS);
}

void Router::SymLink(fuse_req_t req, const char*, fuse_ino_t parent, const char*) {
  reply::Err(req, Self(req).SpillParent(parent) ? EPERM : EROFS);
}

void Router::Rename(fuse_req_t req, fuse_ino_t parent, const char* name,
                    fuse_ino_t newparent, const char* newname, unsigned int flags) {
  auto& self = Self(req);
  auto from = self.SpillParent(parent);
  auto to = self.SpillParent(newparent);
  if (from && to) return self.spill_->Rename(req, *from, name, *to, newname, flags);
  reply::Err(req, from || to ? EXDEV : EROFS);
}

void Router::Link(fuse_req_t req, fuse_ino_t, fuse_ino_t newparent, const char*) {
  reply::Err(req, Self(req).SpillParent(newparent) ? EPERM : EROFS);
}

// Control files exist before they are written (any valid order/K can be
// looked up), so CREATE only reaches us for names that cannot exist.
void Router::Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
                    fuse_file_info* fi) {
  auto& self = Self(req);
  if (auto sp = self.SpillParent(parent)) return self.spill_->Create(req, *sp, name, mode, fi);
  auto p = self.inodes_.Get(parent);
  reply::Err(req, p && p->kind == NodeKind::kVirtual ? EINVAL : EROFS);
}

// Spill nodes keep no extended attributes and do not preallocate.
int Router::ReadOnlyOrUnsupported(fuse_ino_t ino) {
  auto v = inodes_.Get(ino);
  return v && v->kind == NodeKind::kSpill ? EOPNOTSUPP : EROFS;
}

void Router::SetXattr(fuse_req_t req, fuse_ino_t ino, const char*, const char*, size_t,
                      int) {
  reply::Err(req, Self(req).ReadOnlyOrUnsupported(ino));
}

void Router::RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char*) {
  reply::Err(req, Self(req).ReadOnlyOrUnsupported(ino));
}

void Router::Fallocate(fuse_req_t req, fuse_ino_t ino, int, off_t, off_t,
                       fuse_file_info*) {
  reply::Err(req, Self(req).ReadOnlyOrUnsupported(ino));
}

}  // namespace epochfs::fs
