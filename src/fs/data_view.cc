// The dataset's files: attributes, opens and reads (data_view.h).
#include "data_view.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "block_reader.h"
#include "refill_reader.h"

namespace epochfs::fs {
DataView::DataView(const FsContext& ctx, Attributor& attributor, KernelHandover& handover,
                   DescriptorPool& descriptors)
    : ctx_(ctx),
      attributor_(attributor),
      handover_(handover),
      lower_budget_(ctx.cfg.limits.lower_files_per_user, UINT64_MAX, &descriptors),
      passes_(kMaxPasses, kMaxPassHeldBytes, [this](fuse_ino_t ino) { handover_.Drop(ino); }),
      root_(ctx.known, LastKnownGrace(ctx.cfg)) {}

Result<NodeView> DataView::LookupChild(const NodeView& parent, const char* name) {
  std::string path = Join(parent.path, name);
  double age = 0;
  auto st = ctx_.known.Stat(path, store::LowerCall::kLookup, &age);
  if (!st.ok()) return st.status();
  NodeView v = ctx_.inodes.Ref(NodeKind::kLower, path, st.value());
  v.attr_age = age;
  // Under "open" this stat is the check of the open the lookup starts
  // (InodeTable::MarkChecked): that open asks LOWER nothing more.
  if (ctx_.timeouts.open_mode && S_ISREG(v.st.st_mode)) ctx_.inodes.MarkChecked(v.ino);
  return v;
}

// The kernel asks once the attribute timeout has passed (or for an inode it
// got from a readdirplus reply without attributes): answered from what is
// known of LOWER (store/known_lower.h: from memory under "immutable"). The
// inode table keeps only what an open checks, not whole attributes.
void DataView::GetAttr(fuse_req_t req, fuse_ino_t ino, const NodeView& v,
                       const store::AnswerScope& answerable) {
  // Every path walk passes the root: it answers while LOWER hangs.
  double age = 0;
  auto fresh = ino == FUSE_ROOT_ID ? root_.Get()
                                   : ctx_.known.Stat(v.path, store::LowerCall::kStat, &age);
  if (!fresh.ok()) {
    if (answerable.answered()) return;
    return (void)reply::Err(req, ToErrno(fresh.status()));
  }
  struct stat st = fresh.value();
  ctx_.inodes.SetAttr(ino, st);
  st = Exposed(ino, st);
  reply::Attr(req, &st, std::max(0.0, ctx_.timeouts.attr - age));
}

void DataView::ReadLink(fuse_req_t req, const NodeView& v) {
  auto target = ctx_.lower.ReadLink(v.path);
  if (!target.ok()) return (void)reply::Err(req, ToErrno(target.status()));
  reply::Readlink(req, target.value().c_str());
}

void DataView::Open(fuse_req_t req, fuse_ino_t ino, const NodeView& v, fuse_file_info* fi) {
  const int acc = fi->flags & O_ACCMODE;
  if (acc != O_RDONLY || (fi->flags & O_TRUNC)) return (void)reply::Err(req, EROFS);
  if (!S_ISREG(v.st.st_mode)) return (void)reply::Err(req, EACCES);
  LowerOpen o = OpenLower(req, ino, v);
  if (o.err != 0) return (void)reply::Err(req, o.err);
  fi->fh = ctx_.files.Add(std::move(o.file));
  fi->noflush = 1;
  fi->keep_cache = o.keep_cache;
  reply::Open(req, fi);
}

// Opens regular dataset file `v` (inode `ino`) for the caller of `req`:
// checked against LOWER under "open" (by the lookup that started the open,
// or else here: one stat per open), attributed to the caller's job.
DataView::LowerOpen DataView::OpenLower(fuse_req_t req, fuse_ino_t ino, const NodeView& v) {
  struct stat st = v.st;
  const cache::ObjectId id = store::ObjectIdOf(v.path);
  const store::VersionRule& versions = ctx_.lower.versions();
  // The lookup's stat made the node: `st` is of the version LOWER held then.
  if (ctx_.timeouts.open_mode && !ctx_.inodes.TakeChecked(ino)) {
    auto fresh = ctx_.lower.Stat(v.path);
    if (!fresh.ok()) return {nullptr, ToErrno(fresh.status())};
    const store::Version now = versions.Of(fresh.value());
    // The inode is the version it was looked up at, its size and pages
    // that version's (InodeTable, renumber_changed): another version is
    // never served under it. The open is stale: the VFS looks the name up
    // again and retries once (LOOKUP_REVAL), which gets the new version's
    // inode. Without OPEN this is a READ of the inode (its pages are
    // dropped, PassFor); the next open's LOOKUP gets the new inode.
    if (now != versions.Of(st)) {
      // The cached bytes, unless they are the new version already (a later
      // open's, whose pages the kernel may hold).
      const store::ObjectRef cached = ctx_.cache.ram().Find(id);
      if (cached && cached->version != now) ctx_.cache.Invalidate(id);
      return {nullptr, ESTALE};
    }
    st = fresh.value();
    ctx_.inodes.SetAttr(ino, st);
  }

  // Every read-open is attributed (job progress and epochs are tracked from
  // it), cached or not.
  const fuse_ctx* fctx = fuse_req_ctx(req);
  const Attributor::Attribution who = attributor_.Attribute(fctx->pid, fctx->uid, id);
  auto file = std::make_shared<OpenFile>();
  bool keep_cache = false;
  if (static_cast<uint64_t>(st.st_size) > ctx_.cache.max_object_bytes()) {
    if (ctx_.cfg.cache.block_size != 0) return OpenBlocks(ino, v.path, st, fctx->uid, id, who);
    if (int err = lower_budget_.Open(fctx->uid)) return {nullptr, err};
    auto fd = ctx_.lower.OpenFile(v.path);
    if (!fd.ok()) {
      lower_budget_.Close(fctx->uid, 0);
      return {nullptr, ToErrno(fd.status())};
    }
    file->kind = OpenFile::Kind::kStream;
    file->fd = std::move(fd).value();
    ctx_.cache.CountStreamedOpen();
    file->writer = fctx->uid;
    auto now = ctx_.lower.FStat(file->fd.get());  // bounded, as every LOWER call
    if (!now.ok()) {
      lower_budget_.Close(fctx->uid, 0);
      return {nullptr, ToErrno(now.status())};
    }
    if (versions.Of(now.value()) != versions.Of(st)) {
      lower_budget_.Close(fctx->uid, 0);
      ctx_.known.Forget(v.path);
      return {nullptr, ESTALE};  // see below
    }
  } else {
    store::GetRequest g{id, v.path, versions.Of(st), who.job, who.sample};
    file->kind = OpenFile::Kind::kObject;
    file->path = v.path;
    file->job = who.job;
    file->sample = who.sample;
    g.kernel_holds = handover_.KernelHolds(ino, g);
    auto obj = ctx_.cache.Get(g);
    if (!obj.ok()) return {nullptr, ToErrno(obj.status())};
    file->object = std::move(obj).value();
    // The stub of the version the kernel holds: it serves the open from its
    // pages (a READ that still comes refills it, ObjectFor).
    if (file->object->handed_over) return {std::move(file), 0, true};
    // The lower file changed since the kernel took its attributes (under
    // "immutable" it holds them for fuse.attr_timeout): its size there is
    // wrong, and a read would be cut at the old size or padded. ESTALE makes
    // the kernel look the name up again (the VFS retries an open once with
    // LOOKUP_REVAL), which takes the new attributes; the retried open then
    // serves the new bytes. A file that keeps changing gets ESTALE.
    // The name's remembered attributes are forgotten, so that the lookup
    // finds the new ones.
    if (file->object->version != versions.Of(st)) {
      ctx_.known.Forget(v.path);
      return {nullptr, ESTALE};
    }
    keep_cache = handover_.Opened(ino, g.id, file->object, g.kernel_holds);
  }
  return {std::move(file), 0, keep_cache};
}

// A file too large to cache whole, read in blocks (block_reader.h).
// Counted per user as a streamed file is (limits.lower_files_per_user): the
// block an open holds may have left the budget.
DataView::LowerOpen DataView::OpenBlocks(fuse_ino_t ino, const std::string& rel,
                                         const struct stat& st, uid_t uid, cache::ObjectId id,
                                         const Attributor::Attribution& who) {
  if (int err = lower_budget_.Open(uid)) return {nullptr, err};
  auto file = std::make_shared<OpenFile>();
  file->kind = OpenFile::Kind::kBlocks;
  file->writer = uid;
  file->path = rel;
  file->file_id = id;
  file->job = who.job;
  file->sample = who.sample;
  file->version = ctx_.lower.versions().Of(st);
  file->block_size = EffectiveBlockSize(ctx_.cfg.cache.block_size, ctx_.cache.max_object_bytes());
  // Block 0 now: a file changed since the kernel took its attributes is
  // Stale here (ESTALE: the kernel looks it up again, as for a whole
  // object's open), and the first read finds its bytes in hand.
  auto first = BlockOf(ctx_.cache, *file, 0);
  if (!first.ok()) {
    lower_budget_.Close(uid, 0);
    if (ToErrno(first.status()) == ESTALE) ctx_.known.Forget(rel);
    return {nullptr, ToErrno(first.status())};
  }
  handover_.RememberBlock(ino, *file, 0, first.value());
  // The kernel's pages of the file are dropped at each open, so that every
  // block read reaches the policy; a block that leaves the RAM tier drops
  // its range from the kernel too (RememberBlock).
  return {std::move(file), 0, false};
}

// The pass that serves a READ of `ino` at `off` without an open
// (pass_table.h): the one it joins, or a new one, opened as an open would
// be. The errno of a failed open otherwise.
std::pair<std::shared_ptr<OpenFile>, int> DataView::PassFor(fuse_req_t req, fuse_ino_t ino,
                                                            off_t off) {
  // The node's generation: a pass of a number's earlier node is not joined.
  const uint64_t generation = ctx_.inodes.Generation(ino);
  if (std::shared_ptr<OpenFile> f = passes_.Join(ino, generation, static_cast<uint64_t>(off))) {
    return {std::move(f), 0};
  }
  auto v = ctx_.inodes.Get(ino);
  if (!v) return {nullptr, ESTALE};
  if (v->kind != NodeKind::kLower || S_ISDIR(v->st.st_mode)) return {nullptr, EISDIR};
  if (!S_ISREG(v->st.st_mode)) return {nullptr, EACCES};
  const store::ObjectRef before = handover_.HandedBefore(v->path, off);
  LowerOpen o = OpenLower(req, ino, *v);
  if (o.err != 0) {
    // The file changed on LOWER under "immutable": the kernel's size and
    // pages of it are wrong. Drop them, so that its next open looks again.
    if (o.err == ESTALE) handover_.Drop(ino);
    return {nullptr, o.err};
  }
  // A pass is bounded by the table, not by limits.lower_files_per_user.
  if (o.file->kind == OpenFile::Kind::kStream || o.file->kind == OpenFile::Kind::kBlocks) {
    lower_budget_.Close(o.file->writer, 0);
  }
  if (KernelHandover::Patches(before, *o.file)) o.file->patch = true;
  uint64_t held = 0;
  if (o.file->kind == OpenFile::Kind::kObject && !handover_.Resident(o.file->object)) {
    held = o.file->object->data.size();
  } else if (o.file->kind == OpenFile::Kind::kBlocks) {
    held = 2 * o.file->block_size;  // the block in hand and the one ahead
  }
  passes_.Put(ino, v->generation, o.file, held, static_cast<uint64_t>(off));
  return {std::move(o.file), 0};
}

void DataView::ReadWithoutOpen(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off) {
  auto [pass, err] = PassFor(req, ino, off);
  if (err != 0) return (void)reply::Err(req, err);
  if (!pass) return (void)reply::Err(req, EBADF);
  Read(req, ino, pass, size, off);
}

// Work after a reply (the kernel-page bookkeeping below) may throw: the
// callback guard then leaves the answered request alone (callback_guard.h).
void DataView::Read(fuse_req_t req, fuse_ino_t ino, const std::shared_ptr<OpenFile>& f,
                    size_t size, off_t off) {
  switch (f->kind) {
    case OpenFile::Kind::kObject: {
      if (ctx_.role == Role::kDataset) {
        const std::vector<char>& data = f->object->data;
        if (static_cast<uint64_t>(off) >= data.size()) return (void)reply::Buf(req, nullptr, 0);
        const size_t n = std::min(size, data.size() - static_cast<size_t>(off));
        reply::Buf(req, data.data() + off, n);
        if (handover_.KeptByKernel(ino, f, static_cast<uint64_t>(off), n)) passes_.End(ino, f);
        return;
      }
      store::ObjectRef held;
      {
        std::lock_guard lock(f->mu);
        held = f->object;
      }
      // Pages the kernel lost of a file it holds in pieces: only those
      // pieces, unless one copy's gate is shut and the file was lost from
      // its start or keeps losing pages (CacheFront::RefillsWhole): then it
      // is refilled whole, the daemon keeps that copy, and the kernel's
      // next loss of it reads nothing from LOWER.
      if (RefillsInBlocks(held) &&
          !ctx_.cache.RefillsWhole(held, !f->refilled.load(std::memory_order_relaxed),
                                   off == 0)) {
        return ReadRefill(req, ino, *f, held, size, off);
      }
      auto [o, refilled] = handover_.ObjectFor(ino, *f);
      if (!o.ok()) return (void)reply::Err(req, ToErrno(o.status()));
      const std::vector<char>& data = o.value()->data;
      if (static_cast<uint64_t>(off) >= data.size()) return (void)reply::Buf(req, nullptr, 0);
      const size_t n = std::min(size, data.size() - static_cast<size_t>(off));
      reply::Buf(req, data.data() + off, n);
      return handover_.SentToKernel(o.value(), static_cast<uint64_t>(off), n, refilled);
    }
    case OpenFile::Kind::kBlocks: {
      auto got = ReadBlocks(ctx_.cache, *f, size, static_cast<uint64_t>(off));
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
        handover_.RememberBlock(ino, *f, piece.index, piece.block);
        if (ctx_.role == Role::kDataset) handover_.BlockKeptByKernel(piece);
      }
      return;
    }
    case OpenFile::Kind::kStream: {
      auto got = ctx_.lower.ReadAt(f->fd.get(), size, static_cast<uint64_t>(off));
      ctx_.cache.CountStreamed(got.ok() ? got.value().size() : 0, !got.ok());
      if (!got.ok()) return (void)reply::Err(req, ToErrno(got.status()));
      reply::Buf(req, got.value().data(), got.value().size());
      if (ctx_.role == Role::kDataset && !got.value().empty()) {
        handover_.Drop(ino, static_cast<uint64_t>(off), got.value().size());
      }
      return;
    }
    default:  // control and spill files are not the dataset's (Filesystem routes them)
      return (void)reply::Err(req, EBADF);
  }
}

// A mount with OPEN: pages the kernel lost of a file it was handed in
// several blocks, read back in the blocks that hold them. Bytes LOWER no
// longer holds (Stale) are never mixed with the kernel's pages of the old
// ones: those are dropped, as ObjectFor does.
void DataView::ReadRefill(fuse_req_t req, fuse_ino_t ino, OpenFile& f,
                          const store::ObjectRef& stub, size_t size, off_t off) {
  auto got = RefillRead(ctx_.cache, f, stub, size, static_cast<uint64_t>(off));
  if (!got.ok()) {
    if (got.status().code() == Code::kStale) handover_.Drop(ino);
    return (void)reply::Err(req, ToErrno(got.status()));
  }
  if (got.value().empty()) return (void)reply::Buf(req, nullptr, 0);
  std::vector<iovec> iov;
  iov.reserve(got.value().size());
  uint64_t n = 0;
  for (const BlockSlice& piece : got.value()) {
    iov.push_back({const_cast<char*>(piece.data), piece.len});
    n += piece.len;
  }
  reply::Iov(req, iov.data(), static_cast<int>(iov.size()));
  // After the reply: a drop of the kernel's pages must follow their fill.
  handover_.RefilledBlocks(ino, stub, static_cast<uint64_t>(off), n);
}

void DataView::Release(fuse_ino_t ino, OpenFile& f) {
  handover_.LeftByOpen(ino, f);
  if (f.kind == OpenFile::Kind::kStream || f.kind == OpenFile::Kind::kBlocks) {
    lower_budget_.Close(f.writer, 0);
  }
}

}  // namespace epochfs::fs
