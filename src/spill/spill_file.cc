// SpillFileImpl: one spill file's reads, writes, truncation and durability
// (spill_file.h). Every byte goes through staging (StoreCore).
#include "spill_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "epochfs/common/log.h"

namespace epochfs::spill {
struct timespec MtimeNow() {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

SpillFileImpl::SpillFileImpl(std::shared_ptr<StoreCore> core, std::string rel, UniqueFd fd,
                             const FileHeader& header, uint64_t backing_size,
                             std::span<const uint8_t> bitmap0)
    : core_(std::move(core)), c_(*core_), fd_(std::move(fd)), rel_(std::move(rel)) {
  size_ = header.size;
  size_atomic_.store(size_, std::memory_order_release);
  mode_ = header.mode;
  uid_ = header.uid;
  gid_ = header.gid;
  mtime_ = header.mtime;
  alloc_end_ = backing_size;
  LoadIndex(bitmap0);
}

SpillFileImpl::~SpillFileImpl() {
  if (!unlinked) {
    std::lock_guard op(op_mu_);
    Status s = SyncLocked(false);
    if (!s.ok()) log::Error("spill: closing " + rel_ + ": " + s.ToString());
  }
  std::unique_lock lock(c_.mu);
  c_.Drop(lock, this, 0);
  for (uint32_t d : disk) c_.ForgetStored(d);
  if (unlinked) c_.RemoveFile(uid_, size_);
}

void SpillFileImpl::SetSize(uint64_t size) {
  size_ = size;
  size_atomic_.store(size, std::memory_order_release);
  const uint64_t n = ChunkCount(size, c_.chunk_bytes());
  if (disk.size() < n) ResizeDisk(n);
}

uint64_t SpillFileImpl::BeginRead(uint64_t offset, uint64_t size) {
  if (offset >= size_ || size == 0) return 0;
  const uint64_t n = std::min<uint64_t>(size, size_ - offset);
  const uint64_t end = offset + n;
  const uint32_t cb = c_.chunk_bytes();
  const uint64_t c0 = offset / cb, c1 = (end - 1) / cb;
  // Sequential: at 0, or near where the last read ended (FUSE may hand a
  // sequential reader's requests over out of order, up to max_background).
  const uint64_t slack = std::min<uint64_t>(uint64_t{c_.readahead_chunks()} * cb, 8ull << 20);
  const bool sequential = offset == 0 || (seq_next_ != UINT64_MAX && offset + slack >= seq_next_ &&
                                          offset <= seq_next_ + slack);
  // One batch for the chunks of this request (and the read-ahead window of
  // a sequential reader); the caller's Pin waits for each.
  uint64_t batch = c1 - c0 + 1;
  if (sequential) batch += c_.readahead_chunks();
  batch = std::min<uint64_t>(batch, c_.staging_capacity() / 2);
  if (batch > 1) c_.LoadAhead(this, c0, batch);
  return n;
}

Result<size_t> SpillFileImpl::Read(uint64_t offset, std::span<uint8_t> out) {
  std::lock_guard op(op_mu_);
  std::unique_lock lock(c_.mu);
  const uint64_t n = BeginRead(offset, out.size());
  if (n == 0) return size_t{0};
  const uint64_t end = offset + n;
  const uint32_t cb = c_.chunk_bytes();
  for (uint64_t c = offset / cb; c <= (end - 1) / cb; ++c) {
    auto r = c_.Pin(lock, this, c, StoreCore::PinMode::kRead);
    if (!r.ok()) return r.status();
    Entry* e = r.value();
    const uint64_t cstart = c * cb;
    const uint64_t from = std::max(offset, cstart), to = std::min(end, cstart + cb);
    lock.unlock();
    std::memcpy(out.data() + (from - offset), c_.data(e) + (from - cstart), to - from);
    lock.lock();
    c_.Unpin(e);
  }
  seq_next_ = end;
  return static_cast<size_t>(n);
}

Status SpillFileImpl::ReadPieces(uint64_t offset, size_t size, const PieceSink& consume) {
  const uint32_t cb = c_.chunk_bytes();
  const uint64_t span = size == 0 ? 0 : (offset % cb + size - 1) / cb + 1;
  // Pieces in one answer: well below IOV_MAX (1024), which writev(2) takes.
  constexpr uint64_t kMaxPieces = 512;
  if (span > std::min<uint64_t>(c_.piece_pin_limit(), kMaxPieces)) {
    // More chunks than one reader may pin: copy them one at a time.
    thread_local std::vector<uint8_t> buf;
    if (buf.size() < size) buf.resize(size);
    auto n = Read(offset, {buf.data(), size});
    if (!n.ok()) return n.status();
    const struct iovec piece {buf.data(), n.value()};
    consume({&piece, n.value() == 0 ? 0u : 1u});
    return Status();
  }
  std::lock_guard op(op_mu_);
  std::unique_lock lock(c_.mu);
  const uint64_t n = BeginRead(offset, size);
  const uint64_t end = offset + n;
  const uint32_t count = n == 0 ? 0 : static_cast<uint32_t>((end - 1) / cb - offset / cb + 1);
  c_.TakePiecePins(lock, count);
  thread_local std::vector<Entry*> pinned;
  thread_local std::vector<struct iovec> pieces;
  pinned.resize(count);
  pieces.resize(count);
  uint32_t held = 0;
  Status st;
  for (uint64_t c = offset / cb; held < count; ++c) {
    auto r = c_.Pin(lock, this, c, StoreCore::PinMode::kRead);
    if (!r.ok()) {
      st = r.status();
      break;
    }
    const uint64_t cstart = c * cb;
    const uint64_t from = std::max(offset, cstart), to = std::min(end, cstart + cb);
    pinned[held] = r.value();
    pieces[held] = {c_.data(r.value()) + (from - cstart), static_cast<size_t>(to - from)};
    ++held;
  }
  auto release = [&] {
    for (uint32_t i = 0; i < held; ++i) c_.Unpin(pinned[i]);
    c_.GivePiecePins(count);
  };
  if (st.ok()) {
    lock.unlock();
    try {
      consume({pieces.data(), held});
    } catch (...) {
      lock.lock();  // the pins go whatever the consumer does
      release();
      throw;
    }
    lock.lock();
    seq_next_ = end;
  }
  release();
  return st;
}

Result<size_t> SpillFileImpl::Write(uint64_t offset, std::span<const uint8_t> in) {
  if (in.empty()) return size_t{0};
  if (offset > UINT64_MAX / 2 || in.size() > UINT64_MAX / 2 - offset) {
    return InvalidArgument("spill write past the largest file size");
  }
  std::lock_guard op(op_mu_);
  std::unique_lock lock(c_.mu);
  const uint64_t end = offset + in.size();
  const uint64_t old = size_;
  if (end > old) {
    Status q = c_.Reserve(uid_, end - old);
    if (!q.ok()) return q;
    SetSize(end);
  }
  const uint32_t cb = c_.chunk_bytes();
  uint64_t written_end = offset;
  Status failed;
  for (uint64_t c = offset / cb; c <= (end - 1) / cb; ++c) {
    const uint64_t cstart = c * cb;
    const uint64_t lo = std::max(offset, cstart) - cstart;
    const uint64_t hi = std::min(end, cstart + cb) - cstart;
    // No read-modify-write when the bytes of the chunk outside [lo, hi) are
    // known zeros: at or past the old end of the file.
    const bool covers = (lo == 0 || cstart >= old) && (hi == cb || cstart + hi >= old);
    bool fresh = false;
    auto r = c_.Pin(lock, this, c, covers ? StoreCore::PinMode::kOverwrite : StoreCore::PinMode::kWrite,
                    &fresh);
    if (!r.ok()) {
      failed = r.status();
      break;
    }
    Entry* e = r.value();
    lock.unlock();
    uint8_t* d = c_.data(e);
    if (fresh) {
      std::memset(d, 0, lo);
      std::memset(d + hi, 0, cb - hi);
    }
    CopyIntoChunk(e, d, cb, static_cast<uint32_t>(lo), in.subspan(cstart + lo - offset, hi - lo));
    lock.lock();
    c_.MarkDirty(e);
    c_.Unpin(e);
    written_end = cstart + hi;
  }
  mtime_ = MtimeNow();
  header_dirty_ = true;
  if (!failed.ok()) {
    // Keep what was written; give back the rest of the reservation.
    const uint64_t keep = std::max(old, written_end);
    if (keep < end) {
      c_.ReleaseBytes(uid_, end - keep);
      size_ = keep;
      size_atomic_.store(keep, std::memory_order_release);
      ResizeDisk(ChunkCount(keep, cb));
    }
    return failed;
  }
  c_.MaybeWriteBack(lock);
  if (end > old) {
    lock.unlock();
    Preallocate(end);
  }
  return in.size();
}

// Allocates the backing file ahead of a growing file (doubling, up to 64 MiB
// at a time), so that write-backs are O_DIRECT writes inside i_size: ext4
// runs those in parallel, while writes that extend the file serialise on the
// inode. The slots allocated past the logical end read as zeros (never
// written) and are cut at the next Open.
void SpillFileImpl::Preallocate(uint64_t size) {
  const uint64_t need = SlotOffset(ChunkCount(size, c_.chunk_bytes()), c_.chunk_bytes());
  if (need <= alloc_end_) return;
  const uint64_t step = std::max<uint64_t>(need - alloc_end_, std::min<uint64_t>(alloc_end_, 64ull << 20));
  const uint64_t to = RoundUp(std::max(need, alloc_end_ + step), kBlock);
  if (::fallocate(fd_.get(), 0, static_cast<off_t>(alloc_end_), static_cast<off_t>(to - alloc_end_)) == 0) {
    alloc_end_ = to;
  } else {
    alloc_end_ = need;  // unsupported or full: writes extend the file (and report ENOSPC)
  }
}

Status SpillFileImpl::Truncate(uint64_t size) {
  if (size > UINT64_MAX / 2) return InvalidArgument("spill truncate past the largest file size");
  std::lock_guard op(op_mu_);
  std::unique_lock lock(c_.mu);
  const uint64_t old = size_;
  const uint32_t cb = c_.chunk_bytes();
  if (size == old) return Status::Ok();
  if (size > old) {
    // Bytes past the old end are zeros already (in staging and on disk).
    Status q = c_.Reserve(uid_, size - old);
    if (!q.ok()) return q;
    SetSize(size);
  } else {
    const uint64_t keep = ChunkCount(size, cb);
    Entry* tail = nullptr;
    if (size % cb != 0) {
      auto r = c_.Pin(lock, this, size / cb, StoreCore::PinMode::kWrite);
      if (!r.ok()) return r.status();
      tail = r.value();
    }
    c_.Drop(lock, this, keep);
    if (tail) {
      // The old bytes past the new end must never come back.
      std::memset(c_.data(tail) + size % cb, 0, cb - size % cb);
      ForgetKept(tail);
      c_.MarkDirty(tail);
      c_.Unpin(tail);
    }
    bool cuts_written = false;
    for (uint64_t c = keep; c < disk.size(); ++c) {
      cuts_written |= disk[c] != 0;
      c_.ForgetStored(disk[c]);
    }
    ResizeDisk(keep);
    c_.ReleaseBytes(uid_, old - size);
    size_ = size;
    size_atomic_.store(size, std::memory_order_release);
    mtime_ = MtimeNow();
    header_dirty_ = true;
    lock.unlock();
    // The header (size and index) first when written slots go, then cut the
    // slots past the end (holes if the file grows again): a header on disk
    // that still recorded them written would make them read as lost.
    if (cuts_written) {
      Status s = WriteHeader();
      if (!s.ok()) return s;  // the slots stay until a later cut (Open cuts past the end)
    }
    const int rc = ::ftruncate(fd_.get(), static_cast<off_t>(SlotOffset(keep, cb)));
    alloc_end_ = SlotOffset(keep, cb);
    if (rc != 0) return IoStatusFromErrno(errno, "spill truncate " + rel_);
    return Status::Ok();
  }
  mtime_ = MtimeNow();
  header_dirty_ = true;
  return Status::Ok();
}

Status SpillFileImpl::Sync() {
  std::lock_guard op(op_mu_);
  return SyncLocked(true);
}

Status SpillFileImpl::SyncLocked(bool fsync) {
  Status s;
  {
    std::unique_lock lock(c_.mu);
    s = c_.Flush(lock, this);
  }
  if (!s.ok()) return s;
  s = WriteHeader();
  if (!s.ok()) return s;
  if (!fsync) return Status::Ok();
  bool unl;
  std::string rel;
  {
    std::lock_guard lock(c_.mu);
    unl = unlinked;
    rel = rel_;
  }
  if (unl) return Status::Ok();
  if (::fdatasync(fd_.get()) != 0) return IoStatusFromErrno(errno, "spill fdatasync " + rel);
  if (dir_sync_needed_.exchange(false)) {
    // A new or renamed file: make its directory entries durable too.
    std::string dir = rel;
    for (;;) {
      const size_t slash = dir.rfind('/');
      dir = slash == std::string::npos ? std::string(".") : dir.substr(0, slash);
      int dfd = ::openat(c_.root_fd(), dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd < 0) {
        dir_sync_needed_.store(true);
        return IoStatusFromErrno(errno, "spill open directory " + dir);
      }
      const int rc = ::fsync(dfd);
      ::close(dfd);
      if (rc != 0) {
        dir_sync_needed_.store(true);
        return IoStatusFromErrno(errno, "spill fsync directory " + dir);
      }
      if (dir == ".") break;
    }
  }
  return Status::Ok();
}

Status SpillFileImpl::Prefetch() {
  std::lock_guard op(op_mu_);
  std::unique_lock lock(c_.mu);
  const uint64_t n = std::min<uint64_t>(ChunkCount(size_, c_.chunk_bytes()), c_.staging_capacity());
  for (uint64_t c = 0; c < n; ++c) {
    if (chunks.count(c)) continue;
    if (c_.LoadAhead(this, c, n - c) == 0) {
      // No clean room: Pin waits for write-back to make some.
      auto r = c_.Pin(lock, this, c, StoreCore::PinMode::kRead);
      if (!r.ok()) return r.status();
      c_.Unpin(r.value());
    }
  }
  Status first;
  for (uint64_t c = 0; c < n; ++c) {
    Status s = c_.WaitLoaded(lock, this, c);
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

Status SpillFileImpl::WriteOut() {
  std::lock_guard op(op_mu_);
  Status s = SyncLocked(false);
  if (!s.ok()) return s;
  std::unique_lock lock(c_.mu);
  c_.Drop(lock, this, 0);
  return Status::Ok();
}

bool SpillFileImpl::Resident() {
  std::lock_guard lock(c_.mu);
  const uint64_t n = ChunkCount(size_, c_.chunk_bytes());
  uint64_t have = 0;
  for (auto it = chunks.begin(); it != chunks.end() && it->first < n; ++it) {
    const Entry::State st = it->second->state;
    if (st != Entry::State::kLoading && st != Entry::State::kFailed) ++have;
  }
  return have == n;
}

Status SpillFileImpl::SetMode(uint32_t mode) {
  std::lock_guard op(op_mu_);
  {
    std::lock_guard lock(c_.mu);
    mode_ = S_IFREG | (mode & 07777);
    header_dirty_ = true;
  }
  if (c_.is_root() && ::fchmod(fd_.get(), mode & 0777) != 0) return IoStatusFromErrno(errno, "spill chmod");
  return WriteHeader();
}

Status SpillFileImpl::SetOwner(uid_t uid, gid_t gid) {
  std::lock_guard op(op_mu_);
  if (c_.is_root() && ::fchown(fd_.get(), uid, gid) != 0) return IoStatusFromErrno(errno, "spill chown");
  {
    std::lock_guard lock(c_.mu);
    if (uid != static_cast<uid_t>(-1)) {
      c_.MoveBytes(uid_, uid, size_);
      uid_ = uid;
    }
    if (gid != static_cast<gid_t>(-1)) gid_ = gid;
    header_dirty_ = true;
  }
  return WriteHeader();
}

Result<SpillAttr> SpillFileImpl::Attr() {
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) return IoStatusFromErrno(errno, "spill fstat");
  SpillAttr a;
  std::lock_guard lock(c_.mu);
  a.is_dir = false;
  a.size = size_;
  a.blocks = static_cast<uint64_t>(st.st_blocks);
  a.mode = mode_;
  a.uid = uid_;
  a.gid = gid_;
  a.nlink = unlinked ? 0 : 1;
  a.ino = st.st_ino;
  a.atime = st.st_atim;
  a.mtime = mtime_;
  a.ctime = st.st_ctim;
  return a;
}

void SpillFileImpl::MarkUnlinked() { unlinked = true; }
void SpillFileImpl::SetRel(std::string rel) { rel_ = std::move(rel); }

std::string SpillFileImpl::rel() {
  std::lock_guard lock(c_.mu);
  return rel_;
}

bool SpillFileImpl::Idle() {
  std::lock_guard lock(c_.mu);
  return chunks.empty() && !header_dirty_;
}

}  // namespace epochfs::spill
