// The FUSE low-level operations of epochfs.
#include "epochfs/fs/filesystem.h"

#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "epochfs/common/log.h"
#include "block_reader.h"
#include "callback_guard.h"
#include "user_budget.h"
#include "errno_map.h"
#include "handle_table.h"
#include "open_file.h"
#include "pass_table.h"
#include "reply.h"
#include "spill_fs.h"
#include "inode_table.h"
#include "kernel_coverage.h"
#include "kernel_cache.h"

namespace epochfs::fs {
namespace {

bool ValidName(const char* name) {
  size_t n = std::strlen(name);
  if (n == 0 || n > NAME_MAX) return false;
  if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) return false;
  return std::strchr(name, '/') == nullptr;
}

control::Caller CallerOf(fuse_req_t req) {
  const fuse_ctx* c = fuse_req_ctx(req);
  return {c->uid, c->gid, c->pid};
}

// The first READDIRPLUS reply of a listing in the "auto" mix: room for a
// dozen entries, and always for one of the longest name (ReadDirCommon).
constexpr size_t kFirstPlusReplyBytes = 2048;

// A session without OPEN (Role::kDataset): how many passes it keeps, and how
// many bytes of objects outside the RAM tier they may hold (pass_table.h).
constexpr size_t kMaxPasses = 256;
constexpr uint64_t kMaxPassHeldBytes = 64u << 20;
// fuse.no_open, one copy: a file of at most this size that the kernel lost
// some pages of goes back to it as soon as they are refilled (OpenFile::
// patch). A larger one stays in the RAM tier until the kernel has been sent
// all of it again: each refill reads the whole file from LOWER, and a reader
// that goes on reading what the kernel lost would refill it at every READ.
constexpr uint64_t kMaxPatchBytes = 4u << 20;

// How long the kernel may keep the dataset session's entry of `.epochfs`, the
// control session's mountpoint: its revalidation must never fail (a dentry
// the kernel drops takes the mount on it along).
constexpr double kMountpointTimeout = 86400.0;

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

class FilesystemImpl final : public Filesystem {
 public:
  FilesystemImpl(const FsParts& p, const struct stat& root_st)
      : cfg_(*p.config),
        lower_(*p.lower),
        cache_(*p.cache),
        control_(*p.control),
        attributor_(*p.attributor),
        role_(p.role),
        inodes_(root_st,
                p.role == Role::kControl ? NodeKind::kVirtual
                : p.role == Role::kSpill ? NodeKind::kSpill
                                         : NodeKind::kLower,
                /*renumber_changed=*/p.role == Role::kDataset &&
                    p.config->cache.consistency == Consistency::kOpen),
        open_mode_(cfg_.cache.consistency == Consistency::kOpen),
        renumbered_(open_mode_ && role_ == Role::kDataset),
        recheck_((!open_mode_ || renumbered_) && cfg_.fuse.allow_other),
        entry_timeout_(open_mode_ ? 0.0 : Bounded(cfg_.fuse.entry_timeout)),
        attr_timeout_(open_mode_ && !renumbered_ ? 0.0 : Bounded(cfg_.fuse.attr_timeout)),
        dir_entry_timeout_(renumbered_ ? Bounded(cfg_.fuse.entry_timeout) : entry_timeout_),
        start_time_(::time(nullptr)),
        spill_enabled_(p.spill && p.role != Role::kDataset),
        spill_mountpoint_(p.spill && p.role == Role::kDataset),
        max_read_(p.max_read),
        control_budget_(cfg_.limits.control_files_per_user, cfg_.limits.control_bytes_per_user),
        descriptors_(DescriptorPool::ForLimit()),
        spill_budget_(cfg_.limits.spill_files_per_user, UINT64_MAX, &descriptors_),
        lower_budget_(cfg_.limits.lower_files_per_user, UINT64_MAX, &descriptors_) {
    FillOps();
    if (cfg_.fuse.kernel_cache && ServesDataset()) {
      cache_.SetDropListener([this](cache::ObjectId id) {
        const fuse_ino_t ino = kernel_cache_.Dropped(id);
        // Without OPEN a pass may hold the object: its bytes must go too.
        if (ino != 0 && role_ == Role::kDataset) passes_.ForgetObject(ino);
        if (role_ == Role::kDataset) coverage_.Forget(id);
      });
    }
  }

  const fuse_lowlevel_ops& ops() const override { return ops_; }
  void Attach(fuse_session* se) override {
    if (cfg_.fuse.kernel_cache && ServesDataset()) kernel_cache_.Start(se);
    session_.store(se);
  }
  void Detach() override {
    session_.store(nullptr);
    kernel_cache_.Stop();
  }
  void ControlEntryRemoved(const std::string& control_path) override {
    fuse_session* se = session_.load();
    if (se == nullptr) return;
    const size_t slash = control_path.rfind('/');
    const std::string parent = slash == std::string::npos ? "" : control_path.substr(0, slash);
    const std::string name =
        slash == std::string::npos ? control_path : control_path.substr(slash + 1);
    const fuse_ino_t parent_ino = inodes_.Peek(NodeKind::kVirtual, parent);
    if (parent_ino == 0) return;  // the kernel has no entry under it
    const fuse_ino_t ino = inodes_.Peek(NodeKind::kVirtual, control_path);
    inodes_.DetachTree(NodeKind::kVirtual, control_path);
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
  void SetSpillStore(spill::SpillStore* store) override {
    if (spill_enabled_ && store != nullptr && !spill_) {
      spill_ = std::make_unique<SpillFs>(*store, inodes_, files_, dirs_, spill_budget_);
    }
  }
  void SetReadahead(const std::string& ra_file, unsigned kib) override {
    ra_file_ = ra_file;
    ra_kib_ = kib;
  }

 private:
  static FilesystemImpl& Self(fuse_req_t req) {
    return *static_cast<FilesystemImpl*>(fuse_req_userdata(req));
  }

  // A LOWER call made for `req` stops waiting with EINTR once the kernel
  // sends INTERRUPT for it (the reader got a signal it handles): libfuse
  // marks the request, the gate polls the mark (store/lower_gate.h).
  static store::CancelScope Interruptible(fuse_req_t req) {
    return store::CancelScope([req] { return fuse_req_interrupted(req) != 0; });
  }

  // Metadata requests (lookup, getattr, opendir) make their LOWER calls on
  // their own thread, and the gate's watchdog answers them if LOWER does not
  // (store/lower_gate.h, "Inline calls"): a cold lookup then costs no hand-off
  // between threads. After a failed LOWER call such a handler checks
  // answered(): if true it returns without a reply and without taking a
  // lookup. Made after Interruptible (the watchdog polls that predicate), and
  // inside the callback guard, whose token the watchdog's answer claims.
  static store::AnswerScope Answerable(fuse_req_t req) {
    ReplyToken* token = ReplyToken::For(req);
    return store::AnswerScope(
        [token, req](const Status& s) { reply::ErrOn(token, req, ToErrno(s)); });
  }

  // ---- attributes -------------------------------------------------------

  struct stat VirtualAttr(fuse_ino_t ino, const control::VNode& v) const {
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

  // `.epochfs` (and, when split, `.spill`) at the root of the dataset: of
  // the daemon's user when they are the nested sessions' mountpoints, which
  // fusermount3 mounts for a user other than root only on a directory the
  // user may write (nested_mount.h); else root's.
  control::VNode MountDirNode() const {
    control::VNode v{true, false, 0, 0};
    if (role_ == Role::kDataset) {
      v.uid = ::geteuid();
      v.gid = ::getegid();
    }
    return v;
  }

  // Lower attributes as the kernel sees them: our inode number, no write bits.
  static struct stat Exposed(fuse_ino_t ino, struct stat st) {
    st.st_ino = ino;
    return st;
  }

  void ReplyEntry(fuse_req_t req, const NodeView& v, double timeout) {
    ReplyEntry(req, v, timeout, timeout);
  }
  void ReplyEntry(fuse_req_t req, const NodeView& v, double entry_timeout, double attr_timeout) {
    fuse_entry_param e {};
    e.ino = v.ino;
    e.generation = v.generation;
    e.attr = v.kind == NodeKind::kLower ? Exposed(v.ino, v.st) : v.st;
    e.attr_timeout = attr_timeout;
    e.entry_timeout = entry_timeout;
    reply::Entry(req, &e);
  }

  // How long the kernel may keep the name of lower entry `st` before it
  // looks it up again (at the next open under consistency "open").
  double EntryTimeout(const struct stat& st) const {
    return S_ISDIR(st.st_mode) ? dir_entry_timeout_ : entry_timeout_;
  }

  // Resolves `name` in directory `parent` and takes one lookup on the child.
  Result<NodeView> LookupChild(fuse_req_t req, const NodeView& parent, const char* name) {
    if (!ValidName(name)) return InvalidArgument("bad name");
    if (parent.kind == NodeKind::kVirtual) {
      // The dataset session's `.epochfs` is an empty directory: the control
      // session is mounted on it.
      if (parent.detached || role_ == Role::kDataset) return NotFound("removed");
      const control::Caller who = CallerOf(req);
      std::string path = control_.Resolve(Join(parent.path, name), who);
      auto vn = control_.Stat(path, who);
      if (!vn.ok()) return vn.status();
      NodeView v = inodes_.Ref(NodeKind::kVirtual, path, {});
      v.st = VirtualAttr(v.ino, vn.value());
      return v;
    }
    if (parent.ino == FUSE_ROOT_ID && std::strcmp(name, kControlDirName) == 0) {
      NodeView v = inodes_.Ref(NodeKind::kVirtual, "", {});
      v.st = VirtualAttr(v.ino, MountDirNode());
      return v;
    }
    if (parent.ino == FUSE_ROOT_ID && spill_mountpoint_ && std::strcmp(name, kSpillDirName) == 0) {
      // The spill session's mountpoint: an empty directory of this session.
      NodeView v = inodes_.Ref(NodeKind::kVirtual, kSpillDirName, {});
      v.st = VirtualAttr(v.ino, MountDirNode());
      return v;
    }
    std::string path = Join(parent.path, name);
    auto st = lower_.Stat(path);
    if (!st.ok()) return st.status();
    return inodes_.Ref(NodeKind::kLower, path, st.value());
  }

  // ---- ops --------------------------------------------------------------

  static void Init(void* userdata, fuse_conn_info* conn) {
    auto* self = static_cast<FilesystemImpl*>(userdata);
    conn->max_background = self->cfg_.fuse.max_background;
    conn->congestion_threshold = conn->max_background * 3 / 4;
    // READDIRPLUS, by default in the kernel's "auto" mix (fuse.readdirplus):
    // a chunk comes with attributes only when the reader looked entries up
    // since the last one, so `find -type f` or os.scandir over a million
    // files costs names and types (d_type), not a million inodes in the
    // kernel and a million lstat on LOWER (the first chunk, which the kernel
    // always asks as READDIRPLUS, is answered short and bare: see
    // ReadDirCommon). "always": every chunk, for walks that stat every entry
    // after listing (find -printf %s, du). A listing stats nothing itself; a
    // readdirplus reply stats what it returns (StatForPlus).
    if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
    if ((conn->capable & FUSE_CAP_READDIRPLUS_AUTO) &&
        self->cfg_.fuse.readdirplus == ReaddirPlus::kAuto) {
      conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
    } else {
      conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
    }
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
    if (conn->capable & FUSE_CAP_CACHE_SYMLINKS) conn->want |= FUSE_CAP_CACHE_SYMLINKS;
    conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
    // Immutable data: no need for the kernel to compare mtimes on every open.
    // Nor under "open" without OPEN: there an inode is one version for good
    // (InodeTable, renumber_changed), and its attributes can be kept.
    if (!self->open_mode_ || self->renumbered_) conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
    conn->time_gran = 1;
    // Spill writes of 1 MiB reach the store in one request (max_pages follows).
    if (self->spill_enabled_) conn->max_write = 1u << 20;
    if (self->max_read_ != 0) conn->max_read = self->max_read_;
  }

  static void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
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
    if (!child.ok()) {
      if (answerable.answered()) return;
      if (child.status().code() == Code::kNotFound && p->kind == NodeKind::kLower) {
        // Negative entry: the dataset is immutable, remember the absence.
        fuse_entry_param e {};
        e.entry_timeout = self.entry_timeout_;
        return (void)reply::Entry(req, &e);
      }
      return (void)reply::Err(req, ToErrno(child.status()));
    }
    if (child.value().kind != NodeKind::kVirtual) {
      return self.ReplyEntry(req, child.value(), self.EntryTimeout(child.value().st),
                             self.attr_timeout_);
    }
    self.ReplyEntry(req, child.value(), self.role_ == Role::kDataset ? kMountpointTimeout : 0.0);
  }

  static void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
    Self(req).inodes_.Forget(ino, nlookup);
    reply::None(req);
  }

  static void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
    auto& self = Self(req);
    for (size_t i = 0; i < count; ++i) self.inodes_.Forget(forgets[i].ino, forgets[i].nlookup);
    reply::None(req);
  }

  static void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    const store::CancelScope interruptible = Interruptible(req);
    const store::AnswerScope answerable = Answerable(req);
    auto& self = Self(req);
    auto v = self.inodes_.Get(ino);
    if (!v) return (void)reply::Err(req, ESTALE);
    if (v->kind == NodeKind::kSpill) return self.spill_->GetAttr(req, *v, fi);
    if (v->kind == NodeKind::kVirtual) {
      if (v->detached) return (void)reply::Err(req, ENOENT);
      if (self.role_ == Role::kDataset) {  // the other sessions' mountpoints
        struct stat st = self.VirtualAttr(ino, self.MountDirNode());
        return (void)reply::Attr(req, &st, 0.0);
      }
      auto vn = self.control_.Stat(v->path, CallerOf(req));
      if (!vn.ok()) return (void)reply::Err(req, ToErrno(vn.status()));
      struct stat st = self.VirtualAttr(ino, vn.value());
      return (void)reply::Attr(req, &st, 0.0);
    }
    // The kernel asks once attr_timeout_ has passed (or for an inode it got
    // from a readdirplus reply without attributes): answer from LOWER. The
    // inode table keeps only what an open checks, not whole attributes.
    auto fresh = self.lower_.Stat(v->path);
    if (!fresh.ok()) {
      if (answerable.answered()) return;
      return (void)reply::Err(req, ToErrno(fresh.status()));
    }
    struct stat st = fresh.value();
    self.inodes_.SetAttr(ino, st);
    st = Exposed(ino, st);
    reply::Attr(req, &st, self.attr_timeout_);
  }

  static void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
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

  static void ReadLink(fuse_req_t req, fuse_ino_t ino) {
    const store::CancelScope interruptible = Interruptible(req);
    auto& self = Self(req);
    auto v = self.inodes_.Get(ino);
    if (!v) return (void)reply::Err(req, ESTALE);
    if (v->kind != NodeKind::kLower) return (void)reply::Err(req, EINVAL);
    auto target = self.lower_.ReadLink(v->path);
    if (!target.ok()) return (void)reply::Err(req, ToErrno(target.status()));
    reply::Readlink(req, target.value().c_str());
  }

  static void OpenDirOp(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    const store::CancelScope interruptible = Interruptible(req);
    const store::AnswerScope answerable = Answerable(req);
    auto& self = Self(req);
    auto v = self.inodes_.Get(ino);
    if (!v) return (void)reply::Err(req, ESTALE);
    if (v->kind == NodeKind::kSpill) return self.spill_->OpenDirectory(req, *v, fi);
    auto dir = std::make_shared<OpenDir>();
    if (v->kind == NodeKind::kVirtual) {
      if (v->detached) return (void)reply::Err(req, ENOENT);
      const control::Caller who = CallerOf(req);
      if (self.role_ == Role::kDataset) {  // another session's mountpoint: empty
        fi->fh = self.dirs_.Add(std::move(dir));
        return (void)reply::Open(req, fi);
      }
      auto names = self.control_.List(v->path, who);
      if (!names.ok()) return (void)reply::Err(req, ToErrno(names.status()));
      for (const std::string& n : names.value()) {
        std::string path = self.control_.Resolve(Join(v->path, n), who);
        auto vn = self.control_.Stat(path, who);
        if (!vn.ok()) continue;
        dir->AddWithAttrs(n, self.VirtualAttr(0, vn.value()), NodeKind::kVirtual, std::move(path));
      }
    } else {
      auto list = self.lower_.List(v->path);
      if (!list.ok()) {
        if (answerable.answered()) return;
        return (void)reply::Err(req, ToErrno(list.status()));
      }
      dir->lower_path = v->path;
      dir->entries.reserve(list.value().size() + 2);
      for (auto& e : list.value()) {
        if (ino == FUSE_ROOT_ID && e.name == kControlDirName) continue;  // shadowed
        if (ino == FUSE_ROOT_ID && (self.spill_ || self.spill_mountpoint_) && e.name == kSpillDirName) {
          continue;
        }
        dir->AddLower(std::move(e.name), e.type);  // a plain readdir needs only the type
      }
      if (ino == FUSE_ROOT_ID) {
        dir->AddWithAttrs(kControlDirName, self.VirtualAttr(0, self.MountDirNode()),
                          NodeKind::kVirtual, "");
        if (self.spill_) {
          dir->AddWithAttrs(kSpillDirName, self.spill_->RootAttr(), NodeKind::kSpill, "");
        } else if (self.spill_mountpoint_) {
          dir->AddWithAttrs(kSpillDirName, self.VirtualAttr(0, self.MountDirNode()),
                            NodeKind::kVirtual, kSpillDirName);
        }
      }
    }
    fi->fh = self.dirs_.Add(std::move(dir));
    fi->cache_readdir = v->kind == NodeKind::kLower && !self.open_mode_;
    fi->keep_cache = fi->cache_readdir;
    reply::Open(req, fi);
  }

  // The lower entries from offset `off` that a readdirplus reply of `size`
  // bytes can hold get their lstat now, in one batch (a listing itself
  // stats nothing: a plain readdir, which the kernel uses for a walk that
  // needs only names and types, never pays for attributes). An entry gone
  // since keeps no attributes (the reply then gives it none).
  void StatForPlus(fuse_req_t req, const std::string& dir_path, OpenDir& dir, size_t size,
                   off_t off) {
    std::vector<size_t> want;
    std::vector<std::string> names;
    size_t room = size;
    for (size_t i = static_cast<size_t>(off); i < dir.entries.size() + 2; ++i) {
      const char* name = i == 0 ? "." : i == 1 ? ".." : dir.entries[i - 2].name.c_str();
      const size_t len = fuse_add_direntry_plus(req, nullptr, 0, name, nullptr, 0);
      if (len > room) break;
      room -= len;
      if (i >= 2 && dir.entries[i - 2].attr == OpenDir::Attr::kNone) {
        want.push_back(i - 2);
        names.push_back(dir.entries[i - 2].name);
      }
    }
    if (want.empty()) return;
    auto stats = lower_.StatEntries(dir_path, names);
    if (!stats.ok()) return;  // attributes stay unknown; plain entries are still right
    for (size_t k = 0; k < want.size(); ++k) {
      const auto& st = stats.value()[k];
      dir.SetLowerStat(dir.entries[want[k]], st ? &*st : nullptr);
    }
  }

  static void ReadDirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                            fuse_file_info* fi, bool plus) {
    // Not Answerable: this holds the handle's lock around its LOWER call, and
    // a call stuck past its answer would hold it for the next reader.
    const store::CancelScope interruptible = Interruptible(req);
    auto& self = Self(req);
    std::shared_ptr<OpenDir> dir = self.dirs_.Get(fi->fh);
    if (!dir) return (void)reply::Err(req, EBADF);
    std::lock_guard dir_lock(dir->mu);
    // In the "auto" mix the kernel asks for attributes at the start of every
    // listing, whoever reads it; after that only when the reader has looked
    // entries up since the last chunk (its advice). So the first reply is
    // short (kFirstPlusReplyBytes, a dozen entries) and carries no
    // attributes: a walk that needs only names (find, os.walk, ImageFolder)
    // pays no lstat and makes no kernel inode for them, and a reader that
    // stats as it reads (ls -l, scandir + stat) has looked entries up by its
    // next getdents, which then comes with attributes. Measured in
    // docs/benchmarks.md ("Scale"): a cold find 2x faster, stat walks unchanged.
    const bool bare = plus && off == 0 && self.cfg_.fuse.readdirplus == ReaddirPlus::kAuto;
    if (bare) size = std::min(size, kFirstPlusReplyBytes);
    if (plus && off >= 0 && !bare) {
      if (auto v = self.inodes_.Get(ino); v && v->kind == NodeKind::kLower) {
        self.StatForPlus(req, v->path, *dir, size, off);
      }
    }
    std::vector<char> buf(size);
    size_t used = 0;
    // Offsets: 1 = ".", 2 = "..", 3 + i = entry i.
    const size_t total = dir->entries.size() + 2;
    std::string scratch;  // a lower entry's path, built in place
    for (size_t i = static_cast<size_t>(off); i < total; ++i) {
      const off_t next = static_cast<off_t>(i + 1);
      size_t len;
      if (i < 2) {
        struct stat st {};
        st.st_ino = ino;
        st.st_mode = S_IFDIR;
        const char* name = i == 0 ? "." : "..";
        if (plus) {
          fuse_entry_param e {};
          e.attr = st;
          len = fuse_add_direntry_plus(req, buf.data() + used, size - used, name, &e, next);
        } else {
          len = fuse_add_direntry(req, buf.data() + used, size - used, name, &st, next);
        }
      } else {
        const OpenDir::Entry& ent = dir->entries[i - 2];
        if (plus && (bare || ent.attr != OpenDir::Attr::kHave)) {
          // No attributes (not statted, or gone): an entry the kernel only
          // lists (node id 0 in a readdirplus reply: "no attributes given").
          // Its d_ino must not be 0, which would hide it from readdir(3).
          fuse_entry_param e {};
          e.attr.st_mode = ent.type;
          e.attr.st_ino = self.inodes_.Peek(ent.kind, dir->PathOf(ent, scratch));
          if (e.attr.st_ino == 0) e.attr.st_ino = FUSE_ROOT_ID;
          len = fuse_add_direntry_plus(req, buf.data() + used, size - used, ent.name.c_str(), &e,
                                       next);
        } else if (plus) {
          // readdirplus hands the kernel a lookup on each entry it accepts.
          fuse_entry_param e {};
          const struct stat& st = dir->attrs[ent.attr_index].st;
          NodeView v = self.inodes_.Ref(ent.kind, dir->PathOf(ent, scratch), st);
          e.ino = v.ino;
          e.generation = v.generation;
          e.attr = ent.kind == NodeKind::kLower ? Exposed(v.ino, st) : st;
          e.attr.st_ino = v.ino;
          const bool lower = ent.kind == NodeKind::kLower;
          e.entry_timeout = lower ? self.EntryTimeout(st) : 0.0;
          e.attr_timeout = lower ? self.attr_timeout_ : 0.0;
          len = fuse_add_direntry_plus(req, buf.data() + used, size - used, ent.name.c_str(), &e,
                                       next);
          if (len > size - used) self.inodes_.Forget(v.ino, 1);
        } else {
          struct stat st {};
          st.st_mode = ent.type;  // fuse_add_direntry takes only the type and d_ino
          // d_ino 0 would hide the entry from readdir(3): give the inode
          // number when the node exists, else any non-zero number.
          st.st_ino = self.inodes_.Peek(ent.kind, dir->PathOf(ent, scratch));
          if (st.st_ino == 0) st.st_ino = FUSE_ROOT_ID;
          len = fuse_add_direntry(req, buf.data() + used, size - used, ent.name.c_str(), &st,
                                  next);
        }
      }
      if (len > size - used) break;
      used += len;
    }
    reply::Buf(req, buf.data(), used);
  }

  static void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    ReadDirCommon(req, ino, size, off, fi, false);
  }
  static void ReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                          fuse_file_info* fi) {
    ReadDirCommon(req, ino, size, off, fi, true);
  }

  static void ReleaseDir(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
    Self(req).dirs_.Remove(fi->fh);
    reply::Err(req, 0);
  }

  static void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    const store::CancelScope interruptible = Interruptible(req);
    auto& self = Self(req);
    // Without OPEN (fuse.no_open): ENOSYS, once, makes the kernel open every
    // file of this connection by itself from now on (the open succeeds); its
    // READs then come with no handle (PassFor).
    if (self.role_ == Role::kDataset) return (void)reply::Err(req, ENOSYS);
    auto v = self.inodes_.Get(ino);
    if (!v) return (void)reply::Err(req, ESTALE);
    const int acc = fi->flags & O_ACCMODE;
    if (v->kind == NodeKind::kSpill) return self.spill_->Open(req, *v, fi);
    if (v->kind == NodeKind::kVirtual) return self.OpenVirtual(req, *v, fi, acc);
    if (acc != O_RDONLY || (fi->flags & O_TRUNC)) return (void)reply::Err(req, EROFS);
    if (!S_ISREG(v->st.st_mode)) return (void)reply::Err(req, EACCES);
    LowerOpen o = self.OpenLower(req, ino, *v);
    if (o.err != 0) return (void)reply::Err(req, o.err);
    fi->fh = self.files_.Add(std::move(o.file));
    fi->noflush = 1;
    fi->keep_cache = o.keep_cache;
    reply::Open(req, fi);
  }

  // What an open of a dataset file reads: its whole object, its blocks or a
  // stream of LOWER; or the errno the open fails with.
  struct LowerOpen {
    std::shared_ptr<OpenFile> file;
    int err = 0;
    bool keep_cache = false;  // the kernel's pages of the inode may be kept
  };

  // Opens regular dataset file `v` (inode `ino`) for the caller of `req`:
  // checked against LOWER under "open", attributed to the caller's job.
  LowerOpen OpenLower(fuse_req_t req, fuse_ino_t ino, const NodeView& v) {
    struct stat st = v.st;
    const cache::ObjectId id = store::ObjectIdOf(v.path);
    if (open_mode_) {
      auto fresh = lower_.Stat(v.path);
      if (!fresh.ok()) return {nullptr, ToErrno(fresh.status())};
      const bool changed =
          store::VersionOf(fresh.value()) != store::VersionOf(st) || fresh.value().st_ino != st.st_ino;
      if (changed) cache_.Invalidate(id);
      // Without OPEN this is a READ of an inode whose pages the kernel may
      // hold, of the version it was looked up at: a changed file's READ is
      // stale (its pages are dropped, PassFor), and the next open, whose
      // LOOKUP finds the change, gets a new inode (InodeTable).
      if (changed && role_ == Role::kDataset) return {nullptr, ESTALE};
      st = fresh.value();
      inodes_.SetAttr(ino, st);
    }

    // Every read-open is attributed (job progress and epochs are tracked from
    // it), cached or not.
    const fuse_ctx* ctx = fuse_req_ctx(req);
    const Attributor::Attribution who = attributor_.Attribute(ctx->pid, ctx->uid, id);
    auto file = std::make_shared<OpenFile>();
    bool keep_cache = false;
    if (static_cast<uint64_t>(st.st_size) > cache_.max_object_bytes()) {
      if (cfg_.cache.block_size != 0) return OpenBlocks(ino, v.path, st, ctx->uid, id, who);
      if (int err = lower_budget_.Open(ctx->uid)) return {nullptr, err};
      auto fd = lower_.OpenFile(v.path);
      if (!fd.ok()) {
        lower_budget_.Close(ctx->uid, 0);
        return {nullptr, ToErrno(fd.status())};
      }
      file->kind = OpenFile::Kind::kStream;
      file->fd = std::move(fd).value();
      cache_.CountStreamedOpen();
      file->writer = ctx->uid;
      auto now = lower_.FStat(file->fd.get());  // bounded, as every LOWER call
      if (!now.ok()) {
        lower_budget_.Close(ctx->uid, 0);
        return {nullptr, ToErrno(now.status())};
      }
      if (store::VersionOf(now.value()) != store::VersionOf(st)) {
        lower_budget_.Close(ctx->uid, 0);
        return {nullptr, ESTALE};  // see below
      }
    } else {
      store::GetRequest g{id, v.path, store::VersionOf(st), who.job, who.sample};
      file->kind = OpenFile::Kind::kObject;
      file->path = v.path;
      file->job = who.job;
      file->sample = who.sample;
      // One copy: the kernel was sent every byte of this version and the
      // RAM tier holds the stub. A hit, which the kernel serves from its
      // pages (kept); a READ that still comes refills it (ObjectFor).
      // Remembered first: an eviction from now on drops the pages.
      if (role_ != Role::kDataset && cfg_.fuse.one_copy && cfg_.fuse.kernel_cache &&
          inodes_.Served(ino, g.version)) {
        kernel_cache_.Remember(g.id, ino);
        if (store::ObjectRef stub = cache_.HitHandedOver(g)) {
          file->object = std::move(stub);
          return {std::move(file), 0, true};
        }
      }
      auto obj = cache_.Get(g);
      if (!obj.ok()) return {nullptr, ToErrno(obj.status())};
      file->object = std::move(obj).value();
      // The lower file changed since the kernel took its attributes (under
      // "immutable" it holds them for fuse.attr_timeout): its size there is
      // wrong, and a read would be cut at the old size or padded. ESTALE makes
      // the kernel look the name up again (the VFS retries an open once with
      // LOOKUP_REVAL), which takes the new attributes; the retried open then
      // serves the new bytes. A file that keeps changing gets ESTALE.
      if (file->object->version != store::VersionOf(st)) return {nullptr, ESTALE};
      // The kernel's pages of this inode (if any) came from an earlier open of
      // the same version: keep them. Only resident objects are remembered, so
      // that dropping an object from RAM also drops its kernel copy.
      const bool same = inodes_.MarkServed(ino, file->object->version);
      if (cfg_.fuse.kernel_cache && cache_.ram().Find(g.id) == file->object) {
        kernel_cache_.Remember(g.id, ino);
        keep_cache = same;
      }
    }
    return {std::move(file), 0, keep_cache};
  }

  // A file too large to cache whole, read in blocks (block_reader.h).
  // Counted per user as a streamed file is (limits.lower_files_per_user): the
  // block an open holds may have left the budget.
  LowerOpen OpenBlocks(fuse_ino_t ino, const std::string& rel, const struct stat& st, uid_t uid,
                       cache::ObjectId id, const Attributor::Attribution& who) {
    if (int err = lower_budget_.Open(uid)) return {nullptr, err};
    auto file = std::make_shared<OpenFile>();
    file->kind = OpenFile::Kind::kBlocks;
    file->writer = uid;
    file->path = rel;
    file->file_id = id;
    file->job = who.job;
    file->sample = who.sample;
    file->version = store::VersionOf(st);
    file->block_size = EffectiveBlockSize(cfg_.cache.block_size, cache_.max_object_bytes());
    // Block 0 now: a file changed since the kernel took its attributes is
    // Stale here (ESTALE: the kernel looks it up again, as for a whole
    // object's open), and the first read finds its bytes in hand.
    auto first = BlockOf(cache_, *file, 0);
    if (!first.ok()) {
      lower_budget_.Close(uid, 0);
      return {nullptr, ToErrno(first.status())};
    }
    RememberBlock(ino, *file, 0, first.value());
    // The kernel's pages of the file are dropped at each open, so that every
    // block read reaches the policy; a block that leaves the RAM tier drops
    // its range from the kernel too (RememberBlock).
    return {std::move(file), 0, false};
  }

  // The kernel now holds pages of block `index` of `ino`: dropped when the
  // block leaves the RAM tier (if it is resident at all).
  // Without OPEN (Role::kDataset) the kernel keeps every page: the range of
  // a block the RAM tier does not hold is dropped at once.
  void RememberBlock(fuse_ino_t ino, const OpenFile& f, uint64_t index,
                     const store::ObjectRef& block) {
    if (!cfg_.fuse.kernel_cache) return;
    if (Resident(block)) {
      kernel_cache_.Remember(block->id, ino, index * f.block_size, block->data.size());
    } else if (role_ == Role::kDataset) {
      kernel_cache_.Drop(ino, index * f.block_size, block->data.size());
    }
  }

  // True when the RAM tier holds `o`, itself or handed over to the kernel.
  bool Resident(const store::ObjectRef& o) const {
    store::ObjectRef r = cache_.ram().Find(o->id);
    return r == o || (r && r->handed_over && r->version == o->version && r->checksum == o->checksum);
  }

  // Without OPEN the kernel keeps every page it gets, here `n` more bytes of
  // pass `f`'s object: those of an object the RAM tier holds until it
  // leaves; of one it does not hold, while the pass holding it lasts (bounded
  // by kMaxPassHeldBytes), so that the kernel's copies stay within the budget
  // plus that bound. One copy: once the kernel has every byte of a resident
  // object (KernelCoverage), the store hands it over (CacheFront::HandOver)
  // and the pass ends, so that the daemon's copy is freed.
  void KeptByKernel(fuse_ino_t ino, const std::shared_ptr<OpenFile>& f, size_t n) {
    const store::ObjectRef& o = f->object;
    if (!Resident(o)) {
      if (o->data.size() > kMaxPassHeldBytes) kernel_cache_.Drop(ino);  // no pass holds it
      return;  // else the pages go with the pass that holds the object
    }
    kernel_cache_.Remember(o->id, ino);
    // Checked again after Remember: an eviction in between found nothing
    // remembered, and would leave the pages behind.
    if (!Resident(o)) {
      kernel_cache_.Drop(ino);
      return;
    }
    if (!cfg_.fuse.one_copy) return;
    if (f->patch) {
      // A refill of pages the kernel lost: it holds the rest (a READ of
      // more of them refills the object again: a cost, never wrong bytes).
      coverage_.Forget(o->id);
    } else if (!coverage_.Add(o->id, n, o->data.size())) {
      return;
    }
    cache_.HandOver(o);
    passes_.End(ino, f);
  }

  // A mount with OPEN keeps the kernel's pages of a file after its last
  // close; those of bytes the RAM tier does not hold would stay outside the
  // budget (until the kernel reclaims them, or the next open drops them).
  // Dropped at each release: a streamed file's, a file in blocks' (its next
  // open drops them anyway), and a whole object's that is not resident.
  void LeftByOpen(fuse_ino_t ino, OpenFile& f) {
    if (!cfg_.fuse.kernel_cache) return;
    bool drop = f.kind == OpenFile::Kind::kStream || f.kind == OpenFile::Kind::kBlocks;
    if (f.kind == OpenFile::Kind::kObject) {
      std::lock_guard lock(f.mu);
      drop = !Resident(f.object);
    }
    if (drop) kernel_cache_.Drop(ino);
  }

  // The object a READ of open file `f` (a mount with OPEN) is served from,
  // and whether it was refilled for it: the open's own, unless the open
  // found the kernel holding the file (a handed-over stub, OpenLower) and
  // the kernel has lost pages since. Get then reads the file again from
  // LOWER (a refill; the open was the policy's access); the rest of this
  // open reads the refilled bytes. Bytes other than those handed over are
  // never mixed with the kernel's pages of the old ones: those are dropped
  // and the read fails with Stale (ESTALE), as a file changed under an
  // open does.
  std::pair<Result<store::ObjectRef>, bool> ObjectFor(fuse_ino_t ino, OpenFile& f) {
    store::ObjectRef o;
    {
      std::lock_guard lock(f.mu);
      o = f.object;
    }
    if (!o->handed_over) return {o, false};
    store::GetRequest g{o->id, f.path, o->version, f.job, f.sample};
    g.heard = true;
    auto r = cache_.Get(g);
    if (!r.ok()) return {r.status(), false};
    if (r.value()->version != o->version || r.value()->checksum != o->checksum) {
      kernel_cache_.Drop(ino);
      return {Stale(f.path + ": changed on LOWER while open"), false};
    }
    std::lock_guard lock(f.mu);
    f.object = r.value();
    return {r.value(), true};
  }

  // One copy on a mount with OPEN: the kernel keeps the pages it is sent
  // (and the next open of the same version keeps them: OpenLower). Once it
  // has been sent every byte of resident object `o` (KernelCoverage), or
  // what it lost of one of at most kMaxPatchBytes (`refilled`), the store
  // hands the object over; the open files that hold `o` free its bytes at
  // their release.
  void SentToKernel(const store::ObjectRef& o, size_t n, bool refilled) {
    if (!cfg_.fuse.one_copy || !cfg_.fuse.kernel_cache) return;
    if (cache_.ram().Find(o->id) != o) return;  // not resident, or handed over already
    if (refilled && o->data.size() <= kMaxPatchBytes) {
      coverage_.Forget(o->id);
    } else if (!coverage_.Add(o->id, n, o->data.size())) {
      return;
    }
    cache_.HandOver(o);
  }

  // One copy for blocks (no OPEN): a resident block whose every byte the
  // kernel has is handed over. The pass keeps the block in hand (and the one
  // ahead), bounded by PassTable's held bytes.
  void BlockKeptByKernel(const BlockSlice& piece) {
    if (cfg_.fuse.one_copy && Resident(piece.block) &&
        coverage_.Add(piece.block->id, piece.len, piece.block->data.size())) {
      cache_.HandOver(piece.block);
    }
  }

  // The pass that serves a READ of `ino` at `off` without an open
  // (pass_table.h): the one it joins, or a new one, opened as an open would
  // be. The errno of a failed open otherwise.
  std::pair<std::shared_ptr<OpenFile>, int> PassFor(fuse_req_t req, fuse_ino_t ino, off_t off) {
    if (std::shared_ptr<OpenFile> f = passes_.Join(ino, static_cast<uint64_t>(off))) {
      return {std::move(f), 0};
    }
    auto v = inodes_.Get(ino);
    if (!v) return {nullptr, ESTALE};
    if (v->kind != NodeKind::kLower || S_ISDIR(v->st.st_mode)) return {nullptr, EISDIR};
    if (!S_ISREG(v->st.st_mode)) return {nullptr, EACCES};
    // Pages the kernel lost of a file it had been handed whole (the stub is
    // in the RAM tier): a READ past offset 0 asks for some pages of it, and
    // the kernel still holds the rest.
    const store::ObjectRef before = off != 0 && cfg_.fuse.one_copy
                                        ? cache_.ram().Find(store::ObjectIdOf(v->path))
                                        : nullptr;
    LowerOpen o = OpenLower(req, ino, *v);
    if (o.err != 0) {
      // The file changed on LOWER under "immutable": the kernel's size and
      // pages of it are wrong. Drop them, so that its next open looks again.
      if (o.err == ESTALE) kernel_cache_.Drop(ino);
      return {nullptr, o.err};
    }
    // A pass is bounded by the table, not by limits.lower_files_per_user.
    if (o.file->kind == OpenFile::Kind::kStream || o.file->kind == OpenFile::Kind::kBlocks) {
      lower_budget_.Close(o.file->writer, 0);
    }
    if (before && before->handed_over && before->handed_size <= kMaxPatchBytes &&
        o.file->kind == OpenFile::Kind::kObject && o.file->object->id == before->id &&
        o.file->object->checksum == before->checksum) {
      o.file->patch = true;
    }
    uint64_t held = 0;
    if (o.file->kind == OpenFile::Kind::kObject && !Resident(o.file->object)) {
      held = o.file->object->data.size();
    } else if (o.file->kind == OpenFile::Kind::kBlocks) {
      held = 2 * o.file->block_size;  // the block in hand and the one ahead
    }
    passes_.Put(ino, o.file, held, static_cast<uint64_t>(off));
    return {std::move(o.file), 0};
  }

  void OpenVirtual(fuse_req_t req, const NodeView& v, fuse_file_info* fi, int acc) {
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
      if (int err = control_budget_.Open(who.uid)) return (void)reply::Err(req, err);
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
    fi->fh = files_.Add(std::move(file));
    fi->direct_io = 1;
    fi->nonseekable = 0;
    reply::Open(req, fi);
  }

  // The first READ comes after INIT was processed: set the readahead now.
  void RaiseReadaheadOnce() {
    std::call_once(ra_once_, [this] {
      if (ra_file_.empty()) return;
      std::ofstream ra(ra_file_);
      ra << ra_kib_;
      ra.close();
      if (!ra) log::Debug("cannot raise readahead: " + ra_file_);
    });
  }

  static void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                   fuse_file_info* fi) {
    const store::CancelScope interruptible = Interruptible(req);
    auto& self = Self(req);
    self.RaiseReadaheadOnce();
    std::shared_ptr<OpenFile> f;
    if (self.role_ == Role::kDataset) {
      auto [pass, err] = self.PassFor(req, ino, off);
      if (err != 0) return (void)reply::Err(req, err);
      f = std::move(pass);
    } else {
      f = self.files_.Get(fi->fh);
    }
    if (!f) return (void)reply::Err(req, EBADF);
    const auto slice = [&](const char* data, size_t len) {
      if (static_cast<uint64_t>(off) >= len) return (void)reply::Buf(req, nullptr, 0);
      size_t n = std::min(size, len - static_cast<size_t>(off));
      reply::Buf(req, data + off, n);
    };
    switch (f->kind) {
      case OpenFile::Kind::kObject: {
        if (self.role_ == Role::kDataset) {
          const std::vector<char>& data = f->object->data;
          if (static_cast<uint64_t>(off) >= data.size()) return (void)reply::Buf(req, nullptr, 0);
          const size_t n = std::min(size, data.size() - static_cast<size_t>(off));
          reply::Buf(req, data.data() + off, n);
          return self.KeptByKernel(ino, f, n);
        }
        auto [o, refilled] = self.ObjectFor(ino, *f);
        if (!o.ok()) return (void)reply::Err(req, ToErrno(o.status()));
        const std::vector<char>& data = o.value()->data;
        if (static_cast<uint64_t>(off) >= data.size()) return (void)reply::Buf(req, nullptr, 0);
        const size_t n = std::min(size, data.size() - static_cast<size_t>(off));
        reply::Buf(req, data.data() + off, n);
        return self.SentToKernel(o.value(), n, refilled);
      }
      case OpenFile::Kind::kBlocks: {
        auto got = ReadBlocks(self.cache_, *f, size, static_cast<uint64_t>(off));
        if (!got.ok()) return (void)reply::Err(req, ToErrno(got.status()));
        if (got.value().empty()) return (void)reply::Buf(req, nullptr, 0);
        std::vector<iovec> iov;
        iov.reserve(got.value().size());
        for (const BlockSlice& piece : got.value()) {
          iov.push_back({const_cast<char*>(piece.data), piece.len});
        }
        reply::Iov(req, iov.data(), static_cast<int>(iov.size()));
        // After the reply: a drop of the kernel's pages must follow their fill.
        for (const BlockSlice& piece : got.value()) {
          self.RememberBlock(ino, *f, piece.index, piece.block);
          if (self.role_ == Role::kDataset) self.BlockKeptByKernel(piece);
        }
        return;
      }
      case OpenFile::Kind::kVirtualRead:
        return slice(f->content.data(), f->content.size());
      case OpenFile::Kind::kVirtualWrite: {
        std::lock_guard lock(f->mu);
        return slice(f->content.data(), f->content.size());
      }
      case OpenFile::Kind::kSpill:
        return self.spill_->Read(req, *f, size, off);
      case OpenFile::Kind::kStream: {
        auto got = self.lower_.ReadAt(f->fd.get(), size, static_cast<uint64_t>(off));
        self.cache_.CountStreamed(got.ok() ? got.value().size() : 0, !got.ok());
        if (!got.ok()) return (void)reply::Err(req, ToErrno(got.status()));
        reply::Buf(req, got.value().data(), got.value().size());
        if (self.role_ == Role::kDataset && !got.value().empty()) {
          self.kernel_cache_.Drop(ino, static_cast<uint64_t>(off), got.value().size());
        }
        return;
      }
    }
  }

  static constexpr size_t kMaxPerWrite = 4096;  // one report (VNode::per_write)
  static void Write(fuse_req_t req, fuse_ino_t /*ino*/, const char* buf, size_t size, off_t off,
                    fuse_file_info* fi) {
    auto& self = Self(req);
    std::shared_ptr<OpenFile> f = self.files_.Get(fi->fh);
    if (f != nullptr && f->kind == OpenFile::Kind::kSpill) {
      return self.spill_->Write(req, *f, buf, size, off);
    }
    if (f == nullptr || f->kind != OpenFile::Kind::kVirtualWrite) {
      return (void)reply::Err(req, EROFS);
    }
    constexpr size_t kMaxControlFile = 64u << 20;
    std::lock_guard lock(f->mu);
    if (f->per_write) {  // a report: taken now, whatever the offset; nothing kept
      if (size > kMaxPerWrite) return (void)reply::Err(req, EFBIG);
      Status s = self.control_.Write(f->path, std::string(buf, size), CallerOf(req));
      if (!s.ok()) return (void)reply::Err(req, ToErrno(s));
      return (void)reply::Write(req, size);
    }
    if (f->append) off = static_cast<off_t>(f->content.size());
    if (off < 0 || static_cast<uint64_t>(off) + size > kMaxControlFile) {
      return (void)reply::Err(req, EFBIG);
    }
    // Control files are text written front to back: a write past the end
    // (a hole) is refused, so a 1-byte pwrite cannot make the daemon hold
    // megabytes of zeros.
    if (static_cast<size_t>(off) > f->content.size()) return (void)reply::Err(req, EINVAL);
    const size_t end = static_cast<size_t>(off) + size;
    if (end > f->content.size()) {
      if (!self.control_budget_.Grow(f->writer, end - f->content.size())) {
        return (void)reply::Err(req, EDQUOT);
      }
      f->content.resize(end);
    }
    std::memcpy(f->content.data() + off, buf, size);
    f->dirty = true;
    reply::Write(req, size);
  }

  static void Flush(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
    auto& self = Self(req);
    // Without OPEN there is no FOPEN_NOFLUSH: ENOSYS, once, stops FLUSH on
    // this connection (nothing of the dataset is written).
    if (self.role_ == Role::kDataset) return (void)reply::Err(req, ENOSYS);
    std::shared_ptr<OpenFile> f = self.files_.Get(fi->fh);
    if (f == nullptr || f->kind != OpenFile::Kind::kVirtualWrite) {
      return (void)reply::Err(req, 0);
    }
    std::lock_guard lock(f->mu);
    if (!f->dirty) return (void)reply::Err(req, 0);
    f->dirty = false;
    Status s = self.control_.Write(f->path, f->content, CallerOf(req));
    reply::Err(req, ToErrno(s));
  }

  static void Fsync(fuse_req_t req, fuse_ino_t /*ino*/, int /*datasync*/, fuse_file_info* fi) {
    auto& self = Self(req);
    std::shared_ptr<OpenFile> f = self.files_.Get(fi->fh);
    if (f != nullptr && f->kind == OpenFile::Kind::kSpill) return self.spill_->Fsync(req, *f);
    reply::Err(req, 0);  // read-only and virtual files: nothing to make durable
  }

  static void FsyncDir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) { reply::Err(req, 0); }

  static void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    auto& self = Self(req);
    if (self.role_ == Role::kDataset) return (void)reply::Err(req, 0);  // no handles
    std::shared_ptr<OpenFile> f = self.files_.Get(fi->fh);
    if (f != nullptr) self.LeftByOpen(ino, *f);
    if (f != nullptr && f->kind == OpenFile::Kind::kVirtualWrite) {
      std::lock_guard lock(f->mu);
      self.control_budget_.Close(f->writer, f->content.size());
    } else if (f != nullptr && f->kind == OpenFile::Kind::kSpill) {
      self.spill_budget_.Close(f->writer, 0);
    } else if (f != nullptr &&
               (f->kind == OpenFile::Kind::kStream || f->kind == OpenFile::Kind::kBlocks)) {
      self.lower_budget_.Close(f->writer, 0);
    }
    self.files_.Remove(fi->fh);
    reply::Err(req, 0);
  }

  static void StatFs(fuse_req_t req, fuse_ino_t /*ino*/) {
    const store::CancelScope interruptible = Interruptible(req);
    auto& self = Self(req);
    auto sv = self.lower_.StatFs();
    if (!sv.ok()) return (void)reply::Err(req, ToErrno(sv.status()));
    struct statvfs out = sv.value();
    if (!self.spill_) out.f_flag |= ST_RDONLY;
    reply::Statfs(req, &out);
  }

  // mkdir/rmdir: only inside the control tree. Returns 0 and the parent, or
  // the errno to reply.
  int VirtualParent(fuse_ino_t parent, const char* name, NodeView* dir) {
    auto p = inodes_.Get(parent);
    if (!p) return ESTALE;
    if (p->kind != NodeKind::kVirtual) return EROFS;
    if (p->detached) return ENOENT;
    if (!ValidName(name)) return EINVAL;
    *dir = std::move(*p);
    return 0;
  }

  // The spill node `parent`, when it is one.
  std::optional<NodeView> SpillParent(fuse_ino_t parent) {
    if (!spill_) return std::nullopt;
    auto p = inodes_.Get(parent);
    if (!p || p->kind != NodeKind::kSpill) return std::nullopt;
    return p;
  }

  static void MkDir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
    auto& self = Self(req);
    if (auto sp = self.SpillParent(parent)) return self.spill_->Mkdir(req, *sp, name, mode);
    NodeView dir;
    if (int err = self.VirtualParent(parent, name, &dir)) return (void)reply::Err(req, err);
    const control::Caller who = CallerOf(req);
    Status s = self.control_.Mkdir(self.control_.Resolve(Join(dir.path, name), who), who);
    if (!s.ok()) return (void)reply::Err(req, ToErrno(s));
    auto child = self.LookupChild(req, dir, name);
    if (!child.ok()) return (void)reply::Err(req, ToErrno(child.status()));
    self.ReplyEntry(req, child.value(), 0.0);
  }

  static void RmDir(fuse_req_t req, fuse_ino_t parent, const char* name) {
    auto& self = Self(req);
    if (auto sp = self.SpillParent(parent)) return self.spill_->Rmdir(req, *sp, name);
    NodeView dir;
    if (int err = self.VirtualParent(parent, name, &dir)) return (void)reply::Err(req, err);
    const control::Caller who = CallerOf(req);
    const std::string path = self.control_.Resolve(Join(dir.path, name), who);
    Status s = self.control_.Rmdir(path, who);
    if (s.ok()) self.inodes_.DetachTree(NodeKind::kVirtual, path);
    reply::Err(req, ToErrno(s));
  }

  // Every other modifying operation: the dataset is read-only.
  // In the spill area: regular files come through CREATE; devices, fifos,
  // symlinks and hard links are not kept there (EPERM).
  static void MkNod(fuse_req_t req, fuse_ino_t parent, const char*, mode_t, dev_t) {
    reply::Err(req, Self(req).SpillParent(parent) ? EPERM : EROFS);
  }
  static void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
    auto& self = Self(req);
    if (auto sp = self.SpillParent(parent)) return self.spill_->Unlink(req, *sp, name);
    reply::Err(req, EROFS);
  }
  static void SymLink(fuse_req_t req, const char*, fuse_ino_t parent, const char*) {
    reply::Err(req, Self(req).SpillParent(parent) ? EPERM : EROFS);
  }
  static void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
                     const char* newname, unsigned int flags) {
    auto& self = Self(req);
    auto from = self.SpillParent(parent);
    auto to = self.SpillParent(newparent);
    if (from && to) return self.spill_->Rename(req, *from, name, *to, newname, flags);
    reply::Err(req, from || to ? EXDEV : EROFS);
  }
  static void Link(fuse_req_t req, fuse_ino_t, fuse_ino_t newparent, const char*) {
    reply::Err(req, Self(req).SpillParent(newparent) ? EPERM : EROFS);
  }
  // Control files exist before they are written (any valid order/K can be
  // looked up), so CREATE only reaches us for names that cannot exist.
  static void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
                     fuse_file_info* fi) {
    auto& self = Self(req);
    if (auto sp = self.SpillParent(parent)) return self.spill_->Create(req, *sp, name, mode, fi);
    auto p = self.inodes_.Get(parent);
    reply::Err(req, p && p->kind == NodeKind::kVirtual ? EINVAL : EROFS);
  }
  // Spill nodes keep no extended attributes and do not preallocate.
  int ReadOnlyOrUnsupported(fuse_ino_t ino) {
    auto v = inodes_.Get(ino);
    return v && v->kind == NodeKind::kSpill ? EOPNOTSUPP : EROFS;
  }
  static void SetXattr(fuse_req_t req, fuse_ino_t ino, const char*, const char*, size_t, int) {
    reply::Err(req, Self(req).ReadOnlyOrUnsupported(ino));
  }
  static void RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char*) {
    reply::Err(req, Self(req).ReadOnlyOrUnsupported(ino));
  }
  static void Fallocate(fuse_req_t req, fuse_ino_t ino, int, off_t, off_t, fuse_file_info*) {
    reply::Err(req, Self(req).ReadOnlyOrUnsupported(ino));
  }

  // Every callback but INIT runs under the last-resort guard (callback_guard.h).
  void FillOps() {
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

  const Config& cfg_;
  const store::Lower& lower_;
  store::CacheFront& cache_;
  control::ControlPlane& control_;
  Attributor& attributor_;
  const Role role_;
  // This session serves dataset files (and keeps the kernel's pages of them
  // in step with the RAM tier).
  bool ServesDataset() const { return role_ == Role::kWhole || role_ == Role::kDataset; }
  InodeTable inodes_;
  // Role::kDataset. A pass pushed out drops the pages of what it held.
  PassTable passes_{kMaxPasses, kMaxPassHeldBytes,
                    [this](fuse_ino_t ino) { kernel_cache_.Drop(ino); }};
  const bool open_mode_;
  // "open" without OPEN (Role::kDataset): every open looks its file's name up
  // (entry timeout 0), and a changed file gets a new inode (InodeTable,
  // renumber_changed); so an inode's attributes and pages, which are of one
  // version, may be kept (attr_timeout_), and so may directories' names.
  const bool renumbered_;
  // Shared mount under "immutable" (or renumbered): GETATTR answers from
  // LOWER (see Bounded).
  const bool recheck_;
  const double entry_timeout_;      // files, and negative entries
  const double attr_timeout_;
  const double dir_entry_timeout_;  // directories
  // A timeout the kernel may hold dataset attributes for: on a shared mount
  // (allow_other) at most fuse.permission_timeout.
  double Bounded(double t) const {
    return recheck_ ? std::min(t, cfg_.fuse.permission_timeout) : t;
  }
  const time_t start_time_;
  HandleTable<OpenFile> files_;
  HandleTable<OpenDir> dirs_;
  KernelCacheInvalidator kernel_cache_;
  KernelCoverage coverage_;  // Role::kDataset: what the kernel holds of each object
  std::atomic<fuse_session*> session_{nullptr};  // set between Attach and Detach
  std::string ra_file_;
  unsigned ra_kib_ = 0;
  std::once_flag ra_once_;
  const bool spill_enabled_;     // this session serves the spill area
  const bool spill_mountpoint_;  // Role::kDataset: `.spill` is the kSpill session's mountpoint
  const unsigned max_read_;
  UserBudget control_budget_;
  DescriptorPool descriptors_;  // held by users' open spill and streamed files, all users
  UserBudget spill_budget_;  // spill files open, per user
  UserBudget lower_budget_;  // dataset files open in blocks or streamed (a lower descriptor
                             // each), per user
  std::unique_ptr<SpillFs> spill_;  // null without a spill area (set before serving)
  fuse_lowlevel_ops ops_;
};

}  // namespace

Result<std::unique_ptr<Filesystem>> Filesystem::Create(const FsParts& parts) {
  auto root = parts.lower->Stat("");
  if (!root.ok()) return root.status();
  if (!S_ISDIR(root.value().st_mode)) return InvalidArgument(parts.lower->root() + ": not a directory");
  return std::unique_ptr<Filesystem>(new FilesystemImpl(parts, root.value()));
}

}  // namespace epochfs::fs
