// The kernel's page cache kept in step with the RAM tier, and the one-copy
// hand-over (kernel_handover.h).
#include "kernel_handover.h"

#include <algorithm>
#include <mutex>

namespace epochfs::fs {

// One copy: the inode was served this version, whose every byte the kernel
// may hold (the RAM tier then holds the stub). The open's Get takes the stub
// as a hit, which the kernel serves from its pages (kept); a READ that still
// comes refills it (ObjectFor). Remembered first: an eviction from now on
// drops the pages.
bool KernelHandover::KernelHolds(fuse_ino_t ino, const store::GetRequest& g) {
  if (ctx_.role == Role::kDataset || !ctx_.cfg.fuse.one_copy || !ctx_.cfg.fuse.kernel_cache ||
      !ctx_.inodes.Served(ino, g.version)) {
    return false;
  }
  kernel_cache_.Remember(g.id, ino, g.version);
  return true;
}

// The kernel's pages of this inode (if any) came from an earlier open of the
// same version: keep them. Only resident objects are remembered, so that
// dropping an object from RAM also drops its kernel copy. One copy: an open
// that did not look for the kernel's copy (`held` false: KernelHolds) while
// another open of the inode served this version meanwhile drops the pages:
// the kernel may hold some that this open's bytes (loaded, or a load it
// joined) would never be sent, and they would never be handed over; its
// READs send them whole instead.
bool KernelHandover::Opened(fuse_ino_t ino, cache::ObjectId id, const store::ObjectRef& object,
                            bool held) {
  const bool same = ctx_.inodes.MarkServed(ino, object->version);
  if (ctx_.cfg.fuse.kernel_cache && ctx_.cache.ram().Find(id) == object) {
    kernel_cache_.Remember(id, ino, object->version);
    if (same && !held && ctx_.role != Role::kDataset && ctx_.cfg.fuse.one_copy) return false;
    return same;
  }
  return false;
}

// Dropped when the block leaves the RAM tier (if it is resident at all).
// Without OPEN (Role::kDataset) the kernel keeps every page: the range of a
// block the RAM tier does not hold is dropped at once.
void KernelHandover::RememberBlock(fuse_ino_t ino, const OpenFile& f, uint64_t index,
                                   const store::ObjectRef& block) {
  if (!ctx_.cfg.fuse.kernel_cache) return;
  if (Resident(block)) {
    kernel_cache_.Remember(block->id, ino, block->version, index * f.block_size,
                           block->data.size());
  } else if (ctx_.role == Role::kDataset) {
    kernel_cache_.Drop(ino, index * f.block_size, block->data.size());
  }
}

// A drop queued for an evicted object is skipped when the same version was
// loaded again and its pages remembered since (kernel_cache.h): the RAM tier
// must hold that version when the worker gets to it.
void KernelHandover::Start(fuse_session* se) {
  kernel_cache_.Start(se, [this](cache::ObjectId id, const store::Version& v) {
    store::ObjectRef r = ctx_.cache.ram().Find(id);
    return r && r->version == v;
  });
}

bool KernelHandover::Resident(const store::ObjectRef& o) const {
  store::ObjectRef r = ctx_.cache.ram().Find(o->id);
  return r == o || (r && r->handed_over && r->version == o->version && r->checksum == o->checksum);
}

// Without OPEN the kernel keeps every page it gets, here `n` more bytes of
// pass `f`'s object: those of an object the RAM tier holds until it leaves;
// of one it does not hold, while the pass holding it lasts (bounded by
// kMaxPassHeldBytes), so that the kernel's copies stay within the budget plus
// that bound. One copy: once the kernel has every byte of a resident object
// (KernelCoverage), the store hands it over (CacheFront::HandOver) and the
// pass ends, so that the daemon's copy is freed.
bool KernelHandover::KeptByKernel(fuse_ino_t ino, const std::shared_ptr<OpenFile>& f,
                                  uint64_t off, size_t n) {
  const store::ObjectRef& o = f->object;
  if (!Resident(o)) {
    if (o->data.size() > kMaxPassHeldBytes) kernel_cache_.Drop(ino);  // no pass holds it
    return false;  // else the pages go with the pass that holds the object
  }
  kernel_cache_.Remember(o->id, ino, o->version);
  // Checked again after Remember: an eviction in between found nothing
  // remembered, and would leave the pages behind.
  if (!Resident(o)) {
    kernel_cache_.Drop(ino);
    return false;
  }
  if (!ctx_.cfg.fuse.one_copy) return false;
  if (f->patch) {
    // A refill of pages the kernel lost: it holds the rest (a READ of more
    // of them refills the object again: a cost, never wrong bytes).
    coverage_.Forget(o->id);
  } else if (!coverage_.Add(o->id, off, n, o->data.size())) {
    return false;
  }
  ctx_.cache.HandOver(o);
  return true;
}

// A mount with OPEN keeps the kernel's pages of a file after its last close;
// those of bytes the RAM tier does not hold would stay outside the budget
// (until the kernel reclaims them, or the next open drops them). Dropped at
// each release: a streamed file's, a file in blocks' (its next open drops
// them anyway), and a whole object's that is not resident.
void KernelHandover::LeftByOpen(fuse_ino_t ino, OpenFile& f) {
  if (!ctx_.cfg.fuse.kernel_cache) return;
  bool drop = f.kind == OpenFile::Kind::kStream || f.kind == OpenFile::Kind::kBlocks;
  if (f.kind == OpenFile::Kind::kObject) {
    std::lock_guard lock(f.mu);
    drop = !Resident(f.object);
  }
  if (drop) kernel_cache_.Drop(ino);
}

// The open's own object, unless the open found the kernel holding the file (a
// handed-over stub, KernelHolds) and the kernel has lost pages since. Get then
// reads the file again from LOWER (a refill; the open was the policy's
// access, and its hit becomes a refill); the rest of this open reads the
// refilled bytes. (A stub with a
// checksum per block is refilled by blocks instead: refill_reader.h, which
// the DataView asks first.) Bytes other than
// those handed over (another checksum or size) are never mixed with the
// kernel's pages of the old ones: those are dropped and the read fails with
// Stale (ESTALE), as a file changed under an open does.
std::pair<Result<store::ObjectRef>, bool> KernelHandover::ObjectFor(fuse_ino_t ino, OpenFile& f) {
  store::ObjectRef o;
  {
    std::lock_guard lock(f.mu);
    o = f.object;
  }
  if (!o->handed_over) return {o, false};
  store::GetRequest g{o->id, f.path, o->version, f.job, f.sample};
  g.heard = true;
  // The open's first READ that needs the bytes again: its hit becomes a
  // refill if they are not in RAM (a concurrent READ of the open: not again).
  g.first_refill = !f.refilled.exchange(true, std::memory_order_relaxed);
  auto r = ctx_.cache.Get(g);
  if (!r.ok()) return {r.status(), false};
  // Compared by bytes: LOWER may give an unchanged file another version (a
  // new inode number, CacheFront::AsHandedOver); the same bytes are served.
  if (r.value()->checksum != o->checksum || r.value()->data.size() != o->handed_size) {
    kernel_cache_.Drop(ino);
    return {Stale(f.path + ": changed on LOWER while open"), false};
  }
  std::lock_guard lock(f.mu);
  f.object = r.value();
  return {r.value(), true};
}

// One copy on a mount with OPEN: the kernel keeps the pages it is sent (and
// the next open of the same version keeps them: KernelHolds). Once it has been
// sent every byte of resident object `o` (KernelCoverage), or what it lost of
// one of at most kMaxPatchBytes (`refilled`), the store hands the object
// over; the open files that hold `o` free its bytes at their release.
void KernelHandover::SentToKernel(const store::ObjectRef& o, uint64_t off, size_t n,
                                  bool refilled) {
  if (!ctx_.cfg.fuse.one_copy || !ctx_.cfg.fuse.kernel_cache) return;
  if (ctx_.cache.ram().Find(o->id) != o) return;  // not resident, or handed over already
  if (refilled && o->data.size() <= kMaxPatchBytes) {
    coverage_.Forget(o->id);
  } else if (!coverage_.Add(o->id, off, n, o->data.size())) {
    return;
  }
  // A checksum per piece: pages the kernel loses later are read back a
  // piece at a time (refill_reader.h); none when blocks are off.
  const uint64_t block =
      ctx_.cfg.cache.block_size == 0
          ? 0
          : std::min(kMaxRefillPiece, EffectiveBlockSize(ctx_.cfg.cache.block_size,
                                                         ctx_.cache.max_object_bytes()));
  ctx_.cache.HandOver(o, block);
}

// The refilled bytes went to the kernel after the stub left the RAM tier (an
// eviction in between dropped the inode's pages before these came): they
// leave too.
void KernelHandover::RefilledBlocks(fuse_ino_t ino, const store::ObjectRef& stub, uint64_t off,
                                    uint64_t n) {
  if (!Resident(stub)) kernel_cache_.Drop(ino, off, n);
}

// One copy for blocks (no OPEN): a resident block whose every byte the kernel
// has is handed over. The pass keeps the block in hand (and the one ahead),
// bounded by PassTable's held bytes.
void KernelHandover::BlockKeptByKernel(const BlockSlice& piece) {
  const uint64_t off = static_cast<uint64_t>(piece.data - piece.block->data.data());
  if (ctx_.cfg.fuse.one_copy && Resident(piece.block) &&
      coverage_.Add(piece.block->id, off, piece.len, piece.block->data.size())) {
    ctx_.cache.HandOver(piece.block);
  }
}

// Pages the kernel lost of a file it had been handed whole (the stub is in
// the RAM tier): a READ past offset 0 asks for some pages of it, and the
// kernel still holds the rest.
store::ObjectRef KernelHandover::HandedBefore(const std::string& path, off_t off) const {
  return off != 0 && ctx_.cfg.fuse.one_copy ? ctx_.cache.ram().Find(store::ObjectIdOf(path))
                                            : nullptr;
}

bool KernelHandover::Patches(const store::ObjectRef& before, const OpenFile& f) {
  return before && before->handed_over && before->handed_size <= kMaxPatchBytes &&
         f.kind == OpenFile::Kind::kObject && f.object->id == before->id &&
         f.object->checksum == before->checksum;
}

}  // namespace epochfs::fs
