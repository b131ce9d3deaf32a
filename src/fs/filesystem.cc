// The Filesystem of one FUSE session (router.h): its lifecycle, the op
// table and the ops that read. The modifying ops are in modify_routes.cc.
#include "epochfs/fs/filesystem.h"

#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>

#include "epochfs/common/log.h"
#include "callback_guard.h"
#include "reply.h"
#include "router.h"

namespace epochfs::fs {
namespace {

// How long the kernel may keep the dataset session's entry of `.epochfs`, the
// control session's mountpoint: its revalidation must never fail (a dentry
// the kernel drops takes the mount on it along).
constexpr double kMountpointTimeout = 86400.0;

}  // namespace

store::KnownLowerOptions KnownLowerOptionsOf(const Config& cfg) {
  store::KnownLowerOptions o;
  o.remember = cfg.cache.consistency == Consistency::kImmutable && cfg.cache.metadata_entries != 0;
  o.max_entries = cfg.cache.metadata_entries;
  o.recheck_grace = LastKnownGrace(cfg);
  if (cfg.fuse.allow_other) {
    o.max_age = std::chrono::milliseconds(
        static_cast<int64_t>(cfg.fuse.permission_timeout * 1000));
  }
  return o;
}

Router::Router(const FsParts& p, const struct stat& root_st)
    : role_(p.role),
      inodes_(root_st,
              p.role == Role::kControl ? NodeKind::kVirtual
              : p.role == Role::kSpill ? NodeKind::kSpill
                                       : NodeKind::kLower,
              /*renumber_changed=*/p.config->cache.consistency == Consistency::kOpen,
              p.lower->versions()),
      own_known_(p.known ? nullptr
                         : std::make_unique<store::KnownLower>(*p.lower,
                                                               KnownLowerOptionsOf(*p.config))),
      ctx_{*p.config, *p.lower,  p.known ? *p.known : *own_known_,
           *p.cache,  p.role,    Timeouts::Of(*p.config),
           inodes_,   files_,    dirs_},
      spill_enabled_(p.spill && p.role != Role::kDataset),
      spill_mountpoint_(p.spill && p.role == Role::kDataset),
      max_read_(p.max_read),
      descriptors_(DescriptorPool::ForLimit()),
      spill_budget_(ctx_.cfg.limits.spill_files_per_user, UINT64_MAX, &descriptors_),
      handover_(ctx_),
      control_(ctx_, *p.control),
      data_(ctx_, *p.attributor, handover_, descriptors_),
      listing_(ctx_, control_, spill_, spill_mountpoint_) {
  FillOps();
  if (ctx_.cfg.fuse.kernel_cache && ServesDataset()) {
    ctx_.cache.SetDropListener([this](cache::ObjectId id) {
      const fuse_ino_t ino = handover_.Dropped(id);
      // Without OPEN a pass may hold the object: its bytes must go too.
      if (ino != 0 && role_ == Role::kDataset) data_.ForgetPass(ino);
      handover_.ForgetCoverage(id);
    });
  }
}

void Router::Attach(fuse_session* se) {
  if (ctx_.cfg.fuse.kernel_cache && ServesDataset()) handover_.Start(se);
  session_.store(se);
}

void Router::Detach() {
  session_.store(nullptr);
  handover_.Stop();
}

void Router::ControlEntryRemoved(const std::string& control_path) {
  fuse_session* se = session_.load();
  if (se == nullptr) return;
  control_.EntryRemoved(se, control_path);
}

void Router::SetSpillStore(spill::SpillStore* store) {
  if (spill_enabled_ && store != nullptr && !spill_) {
    spill_ = std::make_unique<SpillFs>(*store, inodes_, files_, dirs_, spill_budget_);
  }
}

void Router::SetReadahead(const std::string& ra_file, unsigned kib) {
  ra_file_ = ra_file;
  ra_kib_ = kib;
}

// Resolves `name` in directory `parent` and takes one lookup on the child.
Result<NodeView> Router::LookupChild(fuse_req_t req, const NodeView& parent, const char* name) {
  if (!ValidName(name)) return InvalidArgument("bad name");
  if (parent.kind == NodeKind::kVirtual) return control_.LookupChild(req, parent, name);
  if (parent.ino == FUSE_ROOT_ID && std::strcmp(name, kControlDirName) == 0) {
    return control_.MountDir("");
  }
  if (parent.ino == FUSE_ROOT_ID && spill_mountpoint_ && std::strcmp(name, kSpillDirName) == 0) {
    // The spill session's mountpoint: an empty directory of this session.
    return control_.MountDir(kSpillDirName);
  }
  return data_.LookupChild(parent, name);
}

void Router::Init(void* userdata, fuse_conn_info* conn) {
  auto* self = static_cast<Router*>(userdata);
  const Config& cfg = self->ctx_.cfg;
  conn->max_background = cfg.fuse.max_background;
  conn->congestion_threshold = conn->max_background * 3 / 4;
  // READDIRPLUS, by default in the kernel's "auto" mix (fuse.readdirplus):
  // a chunk comes with attributes only when the reader looked entries up
  // since the last one, so `find -type f` or os.scandir over a million
  // files costs names and types (d_type), not a million inodes in the
  // kernel and a million lstat on LOWER (the first chunk, which the kernel
  // always asks as READDIRPLUS, is answered short and bare: see
  // Listing::Read). "always": every chunk, for walks that stat every entry
  // after listing (find -printf %s, du). A listing stats nothing itself; a
  // readdirplus reply stats what it returns (Listing::StatForPlus).
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
  if ((conn->capable & FUSE_CAP_READDIRPLUS_AUTO) &&
      cfg.fuse.readdirplus == ReaddirPlus::kAuto) {
    conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
  } else {
    conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
  }
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  if (conn->capable & FUSE_CAP_CACHE_SYMLINKS) conn->want |= FUSE_CAP_CACHE_SYMLINKS;
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  // Immutable data: no need for the kernel to compare mtimes on every open.
  // Nor under "open": there an inode is one version for good (InodeTable,
  // renumber_changed; GETATTR answers that version's size and mtime), so its
  // pages never need dropping for a change; a changed file is a new inode.
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  conn->time_gran = 1;
  // Spill writes of 1 MiB reach the store in one request (max_pages follows).
  if (self->spill_enabled_) conn->max_write = 1u << 20;
  if (self->max_read_ != 0) conn->max_read = self->max_read_;
}

void Router::Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  const store::CancelScope interruptible = Interruptible(req);
  const store::AnswerScope answerable = Answerable(req);
  auto& self = Self(req);
  auto p = self.inodes_.Get(parent);
  if (!p) return (void)reply::Err(req, ESTALE);
  if (p->kind == NodeKind::kSpill) return self.spill_->Lookup(req, *p, name);
  if (self.spill_ && parent == FUSE_ROOT_ID && std::strcmp(name, kSpillDirName) == 0) {
    return self.spill_->LookupRoot(req);
  }
  if (std::strlen(name) > NAME_MAX) return (void)reply::Err(req, ENAMETOOLONG);
  auto child = self.LookupChild(req, *p, name);
  const Timeouts& t = self.ctx_.timeouts;
  if (!child.ok()) {
    if (answerable.answered()) return;
    if (child.status().code() == Code::kNotFound && p->kind == NodeKind::kLower) {
      // Negative entry: the dataset is immutable, remember the absence.
      fuse_entry_param e {};
      e.entry_timeout = t.entry;
      return (void)reply::Entry(req, &e);
    }
    return (void)reply::Err(req, ToErrno(child.status()));
  }
  if (child.value().kind != NodeKind::kVirtual) {
    const double age = child.value().attr_age;
    return ReplyEntry(req, child.value(), std::max(0.0, t.Entry(child.value().st) - age),
                      std::max(0.0, t.attr - age));
  }
  const double timeout = self.role_ == Role::kDataset ? kMountpointTimeout : 0.0;
  ReplyEntry(req, child.value(), timeout, timeout);
}

void Router::Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  Self(req).inodes_.Forget(ino, nlookup);
  reply::None(req);
}

void Router::ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  auto& self = Self(req);
  for (size_t i = 0; i < count; ++i) self.inodes_.Forget(forgets[i].ino, forgets[i].nlookup);
  reply::None(req);
}

void Router::GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  const store::CancelScope interruptible = Interruptible(req);
  const store::AnswerScope answerable = Answerable(req);
  auto& self = Self(req);
  auto v = self.inodes_.Get(ino);
  if (!v) return (void)reply::Err(req, ESTALE);
  if (v->kind == NodeKind::kSpill) return self.spill_->GetAttr(req, *v, fi);
  if (v->kind == NodeKind::kVirtual) return self.control_.GetAttr(req, ino, *v);
  self.data_.GetAttr(req, ino, *v, answerable);
}

void Router::ReadLink(fuse_req_t req, fuse_ino_t ino) {
  const store::CancelScope interruptible = Interruptible(req);
  auto& self = Self(req);
  auto v = self.inodes_.Get(ino);
  if (!v) return (void)reply::Err(req, ESTALE);
  if (v->kind != NodeKind::kLower) return (void)reply::Err(req, EINVAL);
  self.data_.ReadLink(req, *v);
}

void Router::OpenDirOp(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  const store::CancelScope interruptible = Interruptible(req);
  const store::AnswerScope answerable = Answerable(req);
  auto& self = Self(req);
  auto v = self.inodes_.Get(ino);
  if (!v) return (void)reply::Err(req, ESTALE);
  if (v->kind == NodeKind::kSpill) return self.spill_->OpenDirectory(req, *v, fi);
  self.listing_.Open(req, ino, *v, fi, answerable);
}

void Router::ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     fuse_file_info* fi) {
  // Not Answerable: this holds the handle's lock around its LOWER call, and
  // a call stuck past its answer would hold it for the next reader.
  const store::CancelScope interruptible = Interruptible(req);
  Self(req).listing_.Read(req, ino, size, off, fi, false);
}

void Router::ReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                         fuse_file_info* fi) {
  const store::CancelScope interruptible = Interruptible(req);  // not Answerable: see ReadDir
  Self(req).listing_.Read(req, ino, size, off, fi, true);
}

void Router::ReleaseDir(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
  Self(req).listing_.Release(req, fi);
}

void Router::Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  const store::CancelScope interruptible = Interruptible(req);
  auto& self = Self(req);
  // Without OPEN (fuse.no_open): ENOSYS, once, makes the kernel open every
  // file of this connection by itself from now on (the open succeeds); its
  // READs then come with no handle (DataView::ReadWithoutOpen).
  if (self.role_ == Role::kDataset) return (void)reply::Err(req, ENOSYS);
  auto v = self.inodes_.Get(ino);
  if (!v) return (void)reply::Err(req, ESTALE);
  const int acc = fi->flags & O_ACCMODE;
  if (v->kind == NodeKind::kSpill) return self.spill_->Open(req, *v, fi);
  if (v->kind == NodeKind::kVirtual) return self.control_.Open(req, *v, fi, acc);
  self.data_.Open(req, ino, *v, fi);
}

// The first READ comes after INIT was processed: set the readahead now.
void Router::RaiseReadaheadOnce() {
  std::call_once(ra_once_, [this] {
    if (ra_file_.empty()) return;
    std::ofstream ra(ra_file_);
    ra << ra_kib_;
    ra.close();
    if (!ra) log::Debug("cannot raise readahead: " + ra_file_);
  });
}

void Router::Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                  fuse_file_info* fi) {
  const store::CancelScope interruptible = Interruptible(req);
  auto& self = Self(req);
  self.RaiseReadaheadOnce();
  if (self.role_ == Role::kDataset) return self.data_.ReadWithoutOpen(req, ino, size, off);
  std::shared_ptr<OpenFile> f = self.files_.Get(fi->fh);
  if (!f) return (void)reply::Err(req, EBADF);
  switch (f->kind) {
    case OpenFile::Kind::kObject:
    case OpenFile::Kind::kBlocks:
    case OpenFile::Kind::kStream:
      return self.data_.Read(req, ino, f, size, off);
    case OpenFile::Kind::kVirtualRead:
    case OpenFile::Kind::kVirtualWrite:
      return self.control_.Read(req, *f, size, off);
    case OpenFile::Kind::kSpill:
      return self.spill_->Read(req, *f, size, off);
  }
}

void Router::Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto& self = Self(req);
  if (self.role_ == Role::kDataset) return (void)reply::Err(req, 0);  // no handles
  std::shared_ptr<OpenFile> f = self.files_.Get(fi->fh);
  if (f != nullptr) {
    switch (f->kind) {
      case OpenFile::Kind::kObject:
      case OpenFile::Kind::kBlocks:
      case OpenFile::Kind::kStream:
        self.data_.Release(ino, *f);
        break;
      case OpenFile::Kind::kVirtualWrite:
        self.control_.Release(*f);
        break;
      case OpenFile::Kind::kSpill:
        self.spill_budget_.Close(f->writer, 0);
        break;
      case OpenFile::Kind::kVirtualRead:
        break;
    }
  }
  self.files_.Remove(fi->fh);
  reply::Err(req, 0);
}

void Router::StatFs(fuse_req_t req, fuse_ino_t /*ino*/) {
  const store::CancelScope interruptible = Interruptible(req);
  auto& self = Self(req);
  auto sv = self.ctx_.lower.StatFs();
  if (!sv.ok()) return (void)reply::Err(req, ToErrno(sv.status()));
  struct statvfs out = sv.value();
  if (!self.spill_) out.f_flag |= ST_RDONLY;
  reply::Statfs(req, &out);
}

// Every callback but INIT runs under the last-resort guard (callback_guard.h).
void Router::FillOps() {
  ops_ = {};
  ops_.init = Init;
  ops_.lookup = Guard<&Lookup>("lookup");
  ops_.forget = GuardNoReply<&Forget>("forget");
  ops_.forget_multi = GuardNoReply<&ForgetMulti>("forget_multi");
  ops_.getattr = Guard<&GetAttr>("getattr");
  ops_.setattr = Guard<&SetAttr>("setattr");
  ops_.readlink = Guard<&ReadLink>("readlink");
  ops_.opendir = Guard<&OpenDirOp>("opendir");
  ops_.readdir = Guard<&ReadDir>("readdir");
  ops_.readdirplus = Guard<&ReadDirPlus>("readdirplus");
  ops_.releasedir = Guard<&ReleaseDir>("releasedir");
  ops_.open = Guard<&Open>("open");
  ops_.read = Guard<&Read>("read");
  ops_.write = Guard<&Write>("write");
  ops_.flush = Guard<&Flush>("flush");
  ops_.release = Guard<&Release>("release");
  ops_.fsync = Guard<&Fsync>("fsync");
  ops_.fsyncdir = Guard<&FsyncDir>("fsyncdir");
  ops_.statfs = Guard<&StatFs>("statfs");
  ops_.mkdir = Guard<&MkDir>("mkdir");
  ops_.rmdir = Guard<&RmDir>("rmdir");
  ops_.mknod = Guard<&MkNod>("mknod");
  ops_.unlink = Guard<&Unlink>("unlink");
  ops_.symlink = Guard<&SymLink>("symlink");
  ops_.rename = Guard<&Rename>("rename");
  ops_.link = Guard<&Link>("link");
  ops_.create = Guard<&Create>("create");
  ops_.setxattr = Guard<&SetXattr>("setxattr");
  ops_.removexattr = Guard<&RemoveXattr>("removexattr");
  ops_.fallocate = Guard<&Fallocate>("fallocate");
}

Result<std::unique_ptr<Filesystem>> Filesystem::Create(const FsParts& parts) {
  auto root = parts.lower->Stat("");
  if (!root.ok()) return root.status();
  if (!S_ISDIR(root.value().st_mode)) return InvalidArgument(parts.lower->root() + ": not a directory");
  return std::unique_ptr<Filesystem>(new Router(parts, root.value()));
}

}  // namespace epochfs::fs
