// Directory listings (listing.h).
#include "listing.h"

#include <sys/stat.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace epochfs::fs {
namespace {

// The first READDIRPLUS reply of a listing in the "auto" mix: room for a
// dozen entries, and always for one of the longest name (Listing::Read).
constexpr size_t kFirstPlusReplyBytes = 2048;

}  // namespace

void Listing::Open(fuse_req_t req, fuse_ino_t ino, const NodeView& v, fuse_file_info* fi,
                   const store::AnswerScope& answerable) {
  auto dir = std::make_shared<OpenDir>();
  if (v.kind == NodeKind::kVirtual) {
    if (v.detached) return (void)reply::Err(req, ENOENT);
    if (ctx_.role == Role::kDataset) {  // another session's mountpoint: empty
      fi->fh = ctx_.dirs.Add(std::move(dir));
      return (void)reply::Open(req, fi);
    }
    if (int err = control_.FillListing(req, v, *dir)) return (void)reply::Err(req, err);
  } else {
    auto list = ctx_.known.List(v.path);
    if (!list.ok()) {
      if (answerable.answered()) return;
      return (void)reply::Err(req, ToErrno(list.status()));
    }
    dir->lower_path = v.path;
    dir->entries.reserve(list.value().size() + 2);
    for (auto& e : list.value()) {
      if (ino == FUSE_ROOT_ID && e.name == kControlDirName) continue;  // shadowed
      if (ino == FUSE_ROOT_ID && (spill_ || spill_mountpoint_) && e.name == kSpillDirName) {
        continue;
      }
      dir->AddLower(std::move(e.name), e.type);  // a plain readdir needs only the type
    }
    if (ino == FUSE_ROOT_ID) {
      dir->AddWithAttrs(kControlDirName, control_.VirtualAttr(0, control_.MountDirNode()),
                        NodeKind::kVirtual, "");
      if (spill_) {
        dir->AddWithAttrs(kSpillDirName, spill_->RootAttr(), NodeKind::kSpill, "");
      } else if (spill_mountpoint_) {
        dir->AddWithAttrs(kSpillDirName, control_.VirtualAttr(0, control_.MountDirNode()),
                          NodeKind::kVirtual, kSpillDirName);
      }
    }
  }
  fi->fh = ctx_.dirs.Add(std::move(dir));
  fi->cache_readdir = v.kind == NodeKind::kLower && !ctx_.timeouts.open_mode;
  fi->keep_cache = fi->cache_readdir;
  reply::Open(req, fi);
}

// The lower entries from offset `off` that a readdirplus reply of `size`
// bytes can hold get their lstat now, in one batch (a listing itself stats
// nothing: a plain readdir, which the kernel uses for a walk that needs only
// names and types, never pays for attributes). An entry gone since keeps no
// attributes (the reply then gives it none).
void Listing::StatForPlus(fuse_req_t req, const std::string& dir_path, OpenDir& dir,
                          size_t size, off_t off) {
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
  auto stats = ctx_.known.StatEntries(dir_path, names);
  if (!stats.ok()) return;  // attributes stay unknown; plain entries are still right
  for (size_t k = 0; k < want.size(); ++k) {
    const auto& st = stats.value()[k];
    dir.SetLowerStat(dir.entries[want[k]], st ? &*st : nullptr);
  }
}

void Listing::Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi,
                   bool plus) {
  std::shared_ptr<OpenDir> dir = ctx_.dirs.Get(fi->fh);
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
  const bool bare = plus && off == 0 && ctx_.cfg.fuse.readdirplus == ReaddirPlus::kAuto;
  if (bare) size = std::min(size, kFirstPlusReplyBytes);
  if (plus && off >= 0 && !bare) {
    if (auto v = ctx_.inodes.Get(ino); v && v->kind == NodeKind::kLower) {
      StatForPlus(req, v->path, *dir, size, off);
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
        e.attr.st_ino = ctx_.inodes.Peek(ent.kind, dir->PathOf(ent, scratch));
        if (e.attr.st_ino == 0) e.attr.st_ino = FUSE_ROOT_ID;
        len = fuse_add_direntry_plus(req, buf.data() + used, size - used, ent.name.c_str(), &e,
                                     next);
      } else if (plus) {
        // readdirplus hands the kernel a lookup on each entry it accepts.
        fuse_entry_param e {};
        const struct stat& st = dir->attrs[ent.attr_index].st;
        NodeView v = ctx_.inodes.Ref(ent.kind, dir->PathOf(ent, scratch), st);
        e.ino = v.ino;
        e.generation = v.generation;
        e.attr = ent.kind == NodeKind::kLower ? Exposed(v.ino, st) : st;
        e.attr.st_ino = v.ino;
        const bool lower = ent.kind == NodeKind::kLower;
        e.entry_timeout = lower ? ctx_.timeouts.Entry(st) : 0.0;
        e.attr_timeout = lower ? ctx_.timeouts.attr : 0.0;
        len = fuse_add_direntry_plus(req, buf.data() + used, size - used, ent.name.c_str(), &e,
                                     next);
        if (len > size - used) ctx_.inodes.Forget(v.ino, 1);
      } else {
        struct stat st {};
        st.st_mode = ent.type;  // fuse_add_direntry takes only the type and d_ino
        // d_ino 0 would hide the entry from readdir(3): give the inode
        // number when the node exists, else any non-zero number.
        st.st_ino = ctx_.inodes.Peek(ent.kind, dir->PathOf(ent, scratch));
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

void Listing::Release(fuse_req_t req, fuse_file_info* fi) {
  ctx_.dirs.Remove(fi->fh);
  reply::Err(req, 0);
}

}  // namespace epochfs::fs
