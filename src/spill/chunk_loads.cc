// StoreCore's loads (spill_file.h): submitting slot reads, the checks of a
// completed read on the I/O thread (header, lengths, checksum, decoding),
// and the checksum of a raw chunk deferred to its first Pin (Verify).
#include <algorithm>
#include <cstring>
#include <string>

#include "epochfs/common/hash.h"
#include "epochfs/common/log.h"
#include "spill_file.h"

namespace epochfs::spill {

Status StoreCore::Verify(std::unique_lock<std::mutex>& lock, Entry* e) {
  // The caller's pin keeps the entry and its bytes (no other thread pins the
  // chunks of a file that this one is operating on: the file's op mutex).
  lock.unlock();
  const bool good = Checksum(data(e), e->verify_len) == e->verify_sum;
  lock.lock();
  e->unverified = false;
  if (good) return Status::Ok();
  ++stats_.checksum_errors;
  auto* f = static_cast<SpillFileImpl*>(e->owner);
  Status st = Corruption("spill file " + f->RelLocked() + ": chunk " + std::to_string(e->chunk) +
                         ": checksum mismatch");
  lock.unlock();
  log::Error("spill: " + st.message());
  lock.lock();
  return st;
}

void StoreCore::StartLoads(const std::vector<Entry*>& entries) {
  if (entries.empty()) return;
  std::vector<IoOp*> ops;
  ops.reserve(entries.size());
  for (Entry* e : entries) {
    auto* f = static_cast<SpillFileImpl*>(e->owner);
    const uint32_t known = e->chunk < f->disk.size() ? f->disk[e->chunk] : 0;
    const uint64_t stored = known == SpillFileImpl::kUnknown ? opt_.chunk_bytes : known;
    const uint64_t cstart = e->chunk * opt_.chunk_bytes;
    // Bytes of the chunk below the file's end: the rest is zeroed after the
    // load, whatever the slot holds (it may hold bytes of a write that was
    // never synced, past the size that was).
    e->io_stored = static_cast<uint32_t>(std::min<uint64_t>(opt_.chunk_bytes, f->size_ - cstart));
    IoOp& op = e->op;
    op.write = false;
    op.fd = f->fd();
    op.offset = SlotOffset(e->chunk, opt_.chunk_bytes);
    op.buf = staging_->buffer(e->buf);
    op.len = static_cast<uint32_t>(kBlock + RoundUp(std::min<uint64_t>(stored, staging_->buf_bytes() - kBlock), kBlock));
    op.buf_index = static_cast<int>(e->buf);
    op.prepare = nullptr;
    op.done = &StoreCore::OnReadDone;
    op.ctx = this;
    op.ctx2 = e;
    ops.push_back(&op);
  }
  engine_->Submit(ops);
}

void StoreCore::OnReadDone(IoOp* op, int res) {
  static_cast<StoreCore*>(op->ctx)->ReadDone(static_cast<Entry*>(op->ctx2), res);
}

void StoreCore::ReadDone(Entry* e, int res) {
  // The entry is kLoading: this thread owns its buffer until the state changes.
  uint8_t* buf = staging_->buffer(e->buf);
  uint8_t* out = buf + kBlock;
  const uint32_t valid = e->io_stored;
  Status st;
  bool corrupt = false;
  bool swap = false;
  // A raw chunk whose bytes all lie below the file's end (none are zeroed
  // below) has its checksum checked by the first Pin instead, on the thread
  // that then reads the bytes: they come into its cache once, for the check
  // and for its copy, not once here and again from memory there.
  bool defer = false;
  uint32_t stored = 0;
  ZvcMode mode = ZvcMode::kRaw;
  if (res < 0) {
    st = ErrnoStatus(Code::kIoError, -res, "spill read");
  } else if (static_cast<size_t>(res) < kChunkHeaderBytes) {
    // Only chunks the index records as written are loaded (holes read as
    // zeros without I/O): a slot that is not there was lost (a truncated
    // backing file), never a hole.
    corrupt = true;
    st = Corruption("chunk " + std::to_string(e->chunk) +
                    ": written, but past the end of the backing file");
  } else {
    ChunkHeader h;
    const char* why = "";
    ChunkHeaderKind kind = DecodeChunkHeader({buf, static_cast<size_t>(res)}, &h, &why);
    if (kind == ChunkHeaderKind::kAbsent) {
      corrupt = true;  // as above: a written slot that reads as zeros was zeroed
      st = Corruption("chunk " + std::to_string(e->chunk) + ": written, but its slot is zeros");
    } else if (kind == ChunkHeaderKind::kBad) {
      corrupt = true;
      st = Corruption(std::string("chunk ") + std::to_string(e->chunk) + ": " + why);
    } else if (h.chunk != e->chunk || h.logical_len > opt_.chunk_bytes ||
               static_cast<uint64_t>(res) < kBlock ||
               h.stored_len > static_cast<uint64_t>(res) - kBlock ||
               (h.mode == ZvcMode::kRaw && h.stored_len != h.logical_len)) {
      corrupt = true;
      st = Corruption("chunk " + std::to_string(e->chunk) + ": inconsistent chunk header");
    } else if (!(defer = h.mode == ZvcMode::kRaw && h.stored_len <= valid) &&
               Checksum(out, h.stored_len) != h.checksum) {
      corrupt = true;
      st = Corruption("chunk " + std::to_string(e->chunk) + ": checksum mismatch");
    } else {
      stored = h.stored_len;
      mode = h.mode;
      if (h.mode != ZvcMode::kRaw) {
        uint8_t* dec = staging_->buffer(decode_buf_) + kBlock;
        Status d = ZvcDecode(h.mode, {out, h.stored_len}, {dec, h.logical_len});
        if (!d.ok()) {
          corrupt = true;
          st = Corruption("chunk " + std::to_string(e->chunk) + ": " + d.message());
        } else {
          out = dec;
          swap = true;
        }
      }
      if (st.ok()) {
        if (defer) {
          e->verify_len = h.stored_len;
          e->verify_sum = h.checksum;
        }
        const uint32_t keep = std::min(h.logical_len, valid);
        std::memset(out + keep, 0, opt_.chunk_bytes - keep);
      }
    }
  }
  std::string name, logline;
  {
    std::lock_guard lock(mu);
    auto* f = static_cast<SpillFileImpl*>(e->owner);
    stats_.ssd_read_bytes += res > 0 ? static_cast<uint64_t>(res) : 0;
    if (st.ok()) {
      if (swap) std::swap(e->buf, decode_buf_);
      if (e->chunk < f->disk.size()) {
        if (f->disk[e->chunk] == SpillFileImpl::kUnknown && stored) stats_.stored_bytes += stored;
        f->SetDisk(e->chunk, stored);
      }
      (void)mode;
      e->unverified = defer;
      SetState(e, Entry::State::kClean);
    } else {
      if (corrupt) ++stats_.checksum_errors;
      name = f->RelLocked();
      e->error = Status(st.code(), "spill file " + name + ": " + st.message());
      logline = "spill: " + e->error.message();
      SetState(e, Entry::State::kFailed);
    }
  }
  cv.notify_all();
  if (!logline.empty()) log::Error(logline);
}

}  // namespace epochfs::spill
