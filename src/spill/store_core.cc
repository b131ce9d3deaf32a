// StoreCore: staging, loads, write-backs and their completions (spill_file.h).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "epochfs/common/hash.h"
#include "epochfs/common/log.h"
#include "spill_file.h"

namespace epochfs::spill {

Result<std::shared_ptr<StoreCore>> StoreCore::Create(const SpillOptions& options, UniqueFd root) {
  std::shared_ptr<StoreCore> c(new StoreCore());
  c->opt_ = options;
  c->root_ = std::move(root);
  c->is_root_ = ::geteuid() == 0;
  const uint32_t capacity = static_cast<uint32_t>(
      std::min<uint64_t>(options.staging_bytes / options.chunk_bytes, UINT32_MAX / 2));
  if (capacity < 2) {
    return InvalidArgument("spill staging (" + std::to_string(options.staging_bytes) +
                           " bytes) must hold at least two chunks of " +
                           std::to_string(options.chunk_bytes) + " bytes");
  }
  // queue_depth counts 1 MiB requests, as fio's iodepth with --bs=1M: with
  // smaller chunks, proportionally more one-chunk requests are in flight.
  c->depth_ = options.queue_depth * std::max<uint32_t>(1, (1u << 20) / options.chunk_bytes);
  const size_t data_bytes =
      RoundUp(std::max<size_t>(options.chunk_bytes, ZvcMaxEncodedSize(options.chunk_bytes)), kBlock);
  // Scratch: one per write in flight (compressed slots) + one for the I/O thread.
  auto st = Staging::Create(options.chunk_bytes, kBlock + data_bytes, capacity,
                            c->depth_ + 1);
  if (!st.ok()) return st.status();
  c->staging_ = std::move(st).value();
  c->decode_buf_ = static_cast<uint32_t>(c->staging_->TakeScratch());
  uint32_t ra = options.readahead_chunks ? options.readahead_chunks : 2 * c->depth_;
  c->readahead_ = std::max<uint32_t>(1, std::min<uint32_t>(ra, capacity / 4));
  if (capacity < 4) c->readahead_ = 0;
  std::vector<iovec> fixed;
  if (options.fixed_buffers) fixed = c->staging_->Iovecs();
  auto eng = UringEngine::Create(c->depth_, std::move(fixed));
  if (!eng.ok()) return eng.status();
  c->engine_ = std::move(eng).value();
  return c;
}

StoreCore::~StoreCore() {
  engine_.reset();  // waits for every op in flight (none: files are gone)
}

Status StoreCore::Reserve(uint32_t uid, uint64_t delta) {
  if (opt_.max_bytes != 0 && (logical_ > opt_.max_bytes || delta > opt_.max_bytes - logical_)) {
    return NoSpace("spill quota of " + std::to_string(opt_.max_bytes) + " bytes exceeded");
  }
  const uint64_t mine = UserBytes(uid);
  const uint64_t cap = opt_.max_bytes_per_user;
  if (uid != 0 && cap != 0 && (mine > cap || delta > cap - mine)) {
    return NoSpace("spill quota of " + std::to_string(cap) + " bytes per user exceeded by uid " +
                   std::to_string(uid));
  }
  const uint64_t users = logical_ - UserBytes(0), all = opt_.max_bytes_all_users;
  if (uid != 0 && all != 0 && (users > all || delta > all - users)) {
    return NoSpace("spill space of " + std::to_string(all) +
                   " bytes that users other than root share is full (the rest is root's)");
  }
  logical_ += delta;
  if (delta != 0) user_bytes_[uid] += delta;
  return Status::Ok();
}

Status StoreCore::RoomForEntry(uint32_t uid) const {
  const uint64_t cap = opt_.max_entries_per_user;
  if (uid == 0 || cap == 0) return Status::Ok();
  auto it = user_entries_.find(uid);
  if (it == user_entries_.end() || it->second < cap) return Status::Ok();
  return NoSpace("spill bound of " + std::to_string(cap) +
                 " files and directories per user reached by uid " + std::to_string(uid));
}

SpillStats StoreCore::Stats() const {
  SpillStats s = stats_;
  s.files = files_;
  s.logical_bytes = logical_;
  s.staging_bytes = uint64_t{staging_->used()} * opt_.chunk_bytes;
  s.dirty_bytes = uint64_t{staging_->dirty()} * opt_.chunk_bytes;
  return s;
}

void StoreCore::SetState(Entry* e, Entry::State s) {
  auto dirty = [](Entry::State x) { return x == Entry::State::kDirty || x == Entry::State::kWriting; };
  auto* f = static_cast<SpillFileImpl*>(e->owner);
  if (f) {
    if (dirty(e->state)) --f->dirty_chunks;
    if (dirty(s)) ++f->dirty_chunks;
  }
  staging_->SetState(e, s);
}

void StoreCore::MarkDirty(Entry* e) {
  if (e->state != Entry::State::kDirty) SetState(e, Entry::State::kDirty);
}

void StoreCore::Detach(Entry* e) {
  auto* f = static_cast<SpillFileImpl*>(e->owner);
  SetState(e, Entry::State::kFree);
  f->chunks.erase(e->chunk);
  staging_->Release(e);
}

Entry* StoreCore::TryAllocate(SpillFileImpl* f, uint64_t c) {
  Entry* e = staging_->Allocate(f, c);
  if (!e) {
    Entry* victim = staging_->EvictionCandidate();
    if (!victim) return nullptr;
    Detach(victim);
    e = staging_->Allocate(f, c);
  }
  f->chunks[c] = e;
  return e;
}

Result<Entry*> StoreCore::Pin(std::unique_lock<std::mutex>& lock, SpillFileImpl* f, uint64_t c,
                              PinMode mode, bool* fresh) {
  if (fresh) *fresh = false;
  for (;;) {
    auto it = f->chunks.find(c);
    if (it != f->chunks.end()) {
      Entry* e = it->second;
      if (e->state == Entry::State::kLoading ||
          (e->state == Entry::State::kWriting && mode != PinMode::kRead)) {
        cv.wait(lock);
        continue;
      }
      if (e->state == Entry::State::kFailed) {
        Status s = e->error;
        Detach(e);
        // An overwrite of the whole chunk needs none of its old bytes: it
        // repairs a chunk whose load failed (a read-ahead's, too).
        if (mode == PinMode::kOverwrite) continue;
        return s;
      }
      ++e->pins;
      staging_->Touch(e);
      if (e->unverified) {
        Status v = Verify(lock, e);
        if (!v.ok()) {
          --e->pins;
          Detach(e);  // a later read loads it again (and checks again)
          cv.notify_all();
          if (mode == PinMode::kOverwrite) continue;  // repairs it, as above
          return v;
        }
      }
      return e;
    }
    Entry* e = TryAllocate(f, c);
    if (!e) {
      // Staging is full of dirty or busy chunks: keep write-back going, wait.
      if (StartWriteBack(lock, nullptr) == 0) {
        // Nothing in flight and write-back failing (SSD full or failing):
        // report it rather than wait for room that will not come.
        if (writes_inflight_ == 0 && !writeback_error_.ok()) return writeback_error_;
        cv.wait(lock);
      }
      continue;
    }
    const bool absent = c >= f->disk.size() || f->disk[c] == 0;
    if (absent || mode == PinMode::kOverwrite) {
      if (mode == PinMode::kOverwrite && fresh) *fresh = true;  // the caller fills it
      else std::memset(data(e), 0, opt_.chunk_bytes);
      CountsZeroed(e);  // zeros, or zeros once the caller has filled it
      SetState(e, Entry::State::kClean);
      ++e->pins;
      return e;
    }
    SetState(e, Entry::State::kLoading);
    StartLoads({e});
  }
}

Status StoreCore::WaitLoaded(std::unique_lock<std::mutex>& lock, SpillFileImpl* f, uint64_t c) {
  for (;;) {
    auto it = f->chunks.find(c);
    if (it == f->chunks.end()) return Status::Ok();
    Entry* e = it->second;
    if (e->state == Entry::State::kLoading) {
      cv.wait(lock);
      continue;
    }
    if (e->state == Entry::State::kFailed) {
      Status s = e->error;
      Detach(e);
      return s;
    }
    return Status::Ok();
  }
}

uint64_t StoreCore::LoadAhead(SpillFileImpl* f, uint64_t from, uint64_t count) {
  std::vector<Entry*> loads;
  uint64_t started = 0;
  const uint64_t end = std::min<uint64_t>(from + count, ChunkCount(f->size_, opt_.chunk_bytes));
  for (uint64_t c = from; c < end; ++c) {
    if (f->chunks.count(c)) continue;
    Entry* e = TryAllocate(f, c);
    if (!e) break;
    ++started;
    if (c >= f->disk.size() || f->disk[c] == 0) {
      std::memset(data(e), 0, opt_.chunk_bytes);
      CountsZeroed(e);
      SetState(e, Entry::State::kClean);
      continue;
    }
    SetState(e, Entry::State::kLoading);
    loads.push_back(e);
  }
  StartLoads(loads);
  return started;
}

uint32_t StoreCore::StartWriteBack(std::unique_lock<std::mutex>& lock, SpillFileImpl* only) {
  (void)lock;
  if (writes_inflight_ >= depth_) return 0;
  uint32_t room = depth_ - writes_inflight_;
  std::vector<IoOp*> ops;
  auto start = [&](Entry* e) {
    auto* f = static_cast<SpillFileImpl*>(e->owner);
    SetState(e, Entry::State::kWriting);
    e->wb_failed = false;
    ++writes_inflight_;
    --room;
    const uint64_t cstart = e->chunk * opt_.chunk_bytes;
    // Bytes below the file's end; the rest of the chunk is zeros (invariant).
    e->io_stored = static_cast<uint32_t>(
        f->size_ > cstart ? std::min<uint64_t>(opt_.chunk_bytes, f->size_ - cstart) : 0);
    e->scratch = opt_.compress ? staging_->TakeScratch() : -1;  // one per write in flight
    e->io_counts_ok = CountsFor(*e, e->io_stored, &e->io_counts);
    e->io_count_pass = false;
    e->io_sum_ok = SumFor(*e, e->io_stored, &e->io_sum);
    IoOp& op = e->op;
    op.write = true;
    op.fd = f->fd();
    op.offset = SlotOffset(e->chunk, opt_.chunk_bytes);
    op.prepare = &StoreCore::OnWritePrepare;
    op.done = &StoreCore::OnWriteDone;
    op.ctx = this;
    op.ctx2 = e;
    ops.push_back(&op);
  };
  // Chunks whose write-back failed are retried by Sync/WriteOut (only), not
  // in a loop under memory pressure.
  auto want = [&](Entry* e) {
    return e->state == Entry::State::kDirty && e->pins == 0 && (only || !e->wb_failed);
  };
  if (only) {
    for (auto& [c, e] : only->chunks) {
      if (room == 0) break;
      if (want(e)) start(e);
    }
  } else {
    for (Entry* e = staging_->lru_head(); e && room; e = e->next) {
      if (want(e)) start(e);
    }
  }
  engine_->Submit(ops);
  return static_cast<uint32_t>(ops.size());
}

void StoreCore::OnWritePrepare(IoOp* op) {
  static_cast<StoreCore*>(op->ctx)->WritePrepare(static_cast<Entry*>(op->ctx2));
}

// On the I/O thread, without mu: the chunk is kWriting, so nobody writes its
// buffer meanwhile (Pin for writing and Drop wait for the state to change).
void StoreCore::WritePrepare(Entry* e) {
  uint8_t* in = staging_->buffer(e->buf) + kBlock;
  const uint32_t logical = e->io_stored;
  ChunkHeader h;
  h.chunk = e->chunk;
  h.logical_len = logical;
  h.mode = ZvcMode::kRaw;
  h.stored_len = logical;
  uint8_t* wbuf = staging_->buffer(e->buf);
  int wbuf_index = static_cast<int>(e->buf);
  if (e->scratch >= 0 && logical > 0) {
    // The counts the writer kept while copying, or one counting pass here.
    e->io_count_pass = !e->io_counts_ok;
    if (e->io_count_pass) e->io_counts = ZvcCount({in, logical});
    const ZvcChoice choice = ZvcChoose(logical, e->io_counts);
    // Compressed only when it saves at least one block of I/O; otherwise the
    // slot is written straight from the staging buffer, with no copy.
    if (StoredCompressed(choice, logical)) {
      uint8_t* sbuf = staging_->buffer(static_cast<uint32_t>(e->scratch));
      auto n = ZvcEncodeChosen({in, logical}, choice,
                               {sbuf + kBlock, staging_->buf_bytes() - kBlock});
      if (n.ok()) {
        std::memset(sbuf + kBlock + n.value(), 0, RoundUp(n.value(), kBlock) - n.value());
        h.mode = choice.mode;
        h.stored_len = static_cast<uint32_t>(n.value());
        wbuf = sbuf;
        wbuf_index = e->scratch;
      } else {  // kept counts that do not match the bytes (a bug): the raw slot is right
        log::Error("spill chunk " + std::to_string(e->chunk) + ": " + n.status().ToString());
      }
    }
  }
  // A raw slot's checksum: the writer's (SumFor), or a pass over the bytes here.
  const bool kept = h.mode == ZvcMode::kRaw && e->io_sum_ok;
  h.checksum = kept ? e->io_sum : Checksum(wbuf + kBlock, h.stored_len);
  e->io_sum_ok = kept;
  EncodeChunkHeader(h, {wbuf, kBlock});
  e->io_stored = h.stored_len;
  e->io_compressed = h.mode != ZvcMode::kRaw;
  IoOp& op = e->op;
  op.buf = wbuf;
  op.len = static_cast<uint32_t>(kBlock + RoundUp(h.stored_len, kBlock));
  op.buf_index = wbuf_index;
}

void StoreCore::OnWriteDone(IoOp* op, int res) {
  static_cast<StoreCore*>(op->ctx)->WriteDone(static_cast<Entry*>(op->ctx2), res);
}

void StoreCore::WriteDone(Entry* e, int res) {
  std::string err;
  {
    std::lock_guard lock(mu);
    auto* f = static_cast<SpillFileImpl*>(e->owner);
    --writes_inflight_;
    if (e->scratch >= 0) staging_->ReturnScratch(static_cast<uint32_t>(e->scratch));
    e->scratch = -1;
    if (res == static_cast<int>(e->op.len)) {
      stats_.ssd_write_bytes += static_cast<uint64_t>(res);
      if (e->io_compressed) ++stats_.chunks_compressed; else ++stats_.chunks_raw;
      if (e->io_count_pass) ++stats_.count_passes;
      if (!e->io_compressed && !e->io_sum_ok && e->io_stored > 0) ++stats_.checksum_passes;
      writeback_error_ = Status::Ok();
      if (e->chunk < f->disk.size()) {
        const uint32_t old = f->disk[e->chunk];
        if (old != SpillFileImpl::kUnknown) stats_.stored_bytes -= old;
        stats_.stored_bytes += e->io_stored;
        f->SetDisk(e->chunk, e->io_stored);
      }
      SetState(e, Entry::State::kClean);
    } else {
      Status s = res < 0 ? IoStatusFromErrno(-res, "spill write-back")
                         : IoError("spill write-back: short write");
      err = "spill: file " + f->RelLocked() + " chunk " + std::to_string(e->chunk) + ": " + s.message();
      if (f->write_error.ok()) f->write_error = s;
      writeback_error_ = s;
      e->wb_failed = true;
      // The chunk stays dirty (and may be retried by a later Sync).
      SetState(e, Entry::State::kDirty);
    }
  }
  cv.notify_all();
  if (!err.empty()) log::Error(err);
}

Status StoreCore::Flush(std::unique_lock<std::mutex>& lock, SpillFileImpl* f) {
  for (;;) {
    if (!f->write_error.ok()) {
      // Wait for what is in flight, then report the failure once.
      bool writing = false;
      for (auto& [c, e] : f->chunks) writing |= e->state == Entry::State::kWriting;
      if (writing) { cv.wait(lock); continue; }
      Status s = f->write_error;
      f->write_error = Status::Ok();
      return s;
    }
    if (f->dirty_chunks == 0) return Status::Ok();
    if (StartWriteBack(lock, f) == 0) cv.wait(lock);
  }
}

void StoreCore::Drop(std::unique_lock<std::mutex>& lock, SpillFileImpl* f, uint64_t from) {
  for (;;) {
    bool busy = false;
    for (auto it = f->chunks.lower_bound(from); it != f->chunks.end();) {
      Entry* e = it->second;
      ++it;
      if (e->state == Entry::State::kLoading || e->state == Entry::State::kWriting || e->pins) {
        busy = true;
        continue;
      }
      Detach(e);
    }
    if (!busy) return;
    cv.wait(lock);
  }
}

}  // namespace epochfs::spill
