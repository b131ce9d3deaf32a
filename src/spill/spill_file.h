// The spill store's internals: StoreCore (staging, I/O thread, quota,
// counters: what every file shares; store_core.cc, its loads in
// chunk_loads.cc) and SpillFileImpl (one backing file; spill_file.cc, its
// written-chunk index in file_index.cc).
//
// Thread roles: callers' threads run file operations and start loads and
// write-backs (encoding chunks on their own thread); the engine's I/O thread
// completes them (checks, decoding) and wakes waiters. The checksum of a raw
// chunk loaded whole is checked by the first caller that pins it (Verify).
// Caller threads handed pieces by ReadPieces read them with the chunks
// pinned and the file's op_mu_ held.
//
// Lock order: SpillStoreImpl::ns_mu_ → SpillFileImpl::op_mu_ → StoreCore::mu.
// op_mu_ serialises the data operations of one file (Read, Write, Truncate,
// Sync, Prefetch, WriteOut); StoreCore::mu guards staging, every file's chunk
// map and disk knowledge, the quota and the counters, and is never held
// across a system call that may block on the device.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "chunk_format.h"
#include "header_io.h"
#include "epochfs/common/unique_fd.h"
#include "epochfs/spill/spill_store.h"
#include "staging.h"
#include "epochfs/spill/uring_engine.h"

namespace epochfs::spill {

class SpillFileImpl;

class StoreCore {
 public:
  static Result<std::shared_ptr<StoreCore>> Create(const SpillOptions& options, UniqueFd root);
  ~StoreCore();

  const SpillOptions& options() const { return opt_; }
  uint32_t chunk_bytes() const { return opt_.chunk_bytes; }
  int root_fd() const { return root_.get(); }
  bool is_root() const { return is_root_; }

  // --- Everything below REQUIRES: lock holds mu. ---
  // A pinned entry for chunk `c` of `f`. Loaded contents are checked (a raw
  // chunk's checksum, deferred by its load, is checked here with mu released:
  // Corruption when it fails, the chunk dropped). kRead: contents loaded; kWrite:
  // contents loaded, no write-back in flight; kOverwrite: as kWrite, but the
  // contents need not be loaded: when they were not (*fresh set), the caller
  // writes every byte of the chunk.
  enum class PinMode { kRead, kWrite, kOverwrite };
  Result<Entry*> Pin(std::unique_lock<std::mutex>& lock, SpillFileImpl* f, uint64_t c, PinMode mode,
                     bool* fresh = nullptr);
  void Unpin(Entry* e) {
    if (--e->pins == 0) cv.notify_all();
  }
  void MarkDirty(Entry* e);
  // Chunks that readers handing out pieces (ReadPieces) may hold pinned at
  // once, all files together: half the staging buffer, so that the rest is
  // left for loads, write-back and callers that pin one chunk at a time.
  uint32_t piece_pin_limit() const { return std::max<uint32_t>(1, staging_->capacity() / 2); }
  // Takes `n` (<= piece_pin_limit()) of those, waiting while others hold
  // them; GivePiecePins returns them.
  void TakePiecePins(std::unique_lock<std::mutex>& lock, uint32_t n) {
    cv.wait(lock, [&] { return piece_pins_ + n <= piece_pin_limit(); });
    piece_pins_ += n;
  }
  void GivePiecePins(uint32_t n) {
    piece_pins_ -= n;
    cv.notify_all();
  }
  // Starts loads of the chunks [from, from + count) not staged, without
  // waiting for room (read-ahead, Prefetch). Returns how many it started.
  uint64_t LoadAhead(SpillFileImpl* f, uint64_t from, uint64_t count);
  // Writes back every dirty chunk of `f`, depth() in flight; waits.
  Status Flush(std::unique_lock<std::mutex>& lock, SpillFileImpl* f);
  // Drops the chunks of `f` with index >= from (after their I/O ends),
  // without writing them back.
  void Drop(std::unique_lock<std::mutex>& lock, SpillFileImpl* f, uint64_t from);
  // Waits until the load of f's chunk c (if any) has finished; its status.
  Status WaitLoaded(std::unique_lock<std::mutex>& lock, SpillFileImpl* f, uint64_t c);
  // Keeps write-back going when more than half the staging buffer is dirty.
  void MaybeWriteBack(std::unique_lock<std::mutex>& lock) {
    if (staging_->dirty() * 4 > staging_->capacity()) StartWriteBack(lock, nullptr);
  }
  uint8_t* data(const Entry* e) const { return staging_->buffer(e->buf) + kBlock; }
  uint32_t readahead_chunks() const { return readahead_; }
  // Requests in flight: queue_depth × max(1, 1 MiB / chunk_bytes).
  uint32_t depth() const { return depth_; }
  uint32_t staging_capacity() const { return staging_->capacity(); }

  // Quota: reserves `delta` more logical bytes for a file of `uid`; NoSpace
  // when over max_bytes, or over max_bytes_per_user for a uid other than 0.
  // All REQUIRE mu held.
  Status Reserve(uint32_t uid, uint64_t delta);
  void ReleaseBytes(uint32_t uid, uint64_t delta) {
    logical_ -= delta;
    Unown(uid, delta);
  }
  void AddFile(uint32_t uid, uint64_t size) {
    ++files_;
    logical_ += size;
    if (size != 0) user_bytes_[uid] += size;
    AddEntry(uid);
  }
  void RemoveFile(uint32_t uid, uint64_t size) {
    --files_;
    logical_ -= size;
    Unown(uid, size);
    RemoveEntry(uid);
  }
  // A file of `size` bytes changed owner (chown: no check).
  void MoveBytes(uint32_t from, uint32_t to, uint64_t size) {
    if (from == to) return;
    RemoveEntry(from);
    AddEntry(to);
    if (size == 0) return;
    Unown(from, size);
    user_bytes_[to] += size;
  }
  // Entries (files and directories) per owner: NoSpace when `uid`, not 0,
  // holds max_entries_per_user already (an empty file costs no bytes, but an
  // inode on the disk and the daemon's memory for its node).
  Status RoomForEntry(uint32_t uid) const;
  void AddEntry(uint32_t uid) { ++user_entries_[uid]; }
  void RemoveEntry(uint32_t uid) {
    auto it = user_entries_.find(uid);
    if (it == user_entries_.end()) return;
    if (--it->second == 0) user_entries_.erase(it);
  }
  // Logical bytes of the files `uid` owns.
  uint64_t UserBytes(uint32_t uid) const {
    auto it = user_bytes_.find(uid);
    return it == user_bytes_.end() ? 0 : it->second;
  }
  void ForgetStored(uint32_t stored) {
    if (stored != UINT32_MAX) stats_.stored_bytes -= std::min<uint64_t>(stored, stats_.stored_bytes);
  }
  SpillStats Stats() const;
  void CountHeaderWrite() { stats_.ssd_write_bytes += kBlock; }

  std::mutex mu;
  std::condition_variable cv;  // signalled on every state change of an entry

 private:
  StoreCore() = default;
  Entry* TryAllocate(SpillFileImpl* f, uint64_t c);
  void SetState(Entry* e, Entry::State s);
  void Detach(Entry* e);
  // Checks the stored bytes of a pinned entry loaded unverified (with mu
  // released around the checksum). Corruption, counted and logged, when
  // they do not match.
  Status Verify(std::unique_lock<std::mutex>& lock, Entry* e);
  void StartLoads(const std::vector<Entry*>& entries);
  // Starts write-backs of dirty unpinned chunks (of `only`, or LRU first),
  // keeping at most depth() in flight. Returns how many it started.
  uint32_t StartWriteBack(std::unique_lock<std::mutex>& lock, SpillFileImpl* only);
  static void OnWritePrepare(IoOp* op);
  void WritePrepare(Entry* e);
  static void OnReadDone(IoOp* op, int res);
  static void OnWriteDone(IoOp* op, int res);
  void ReadDone(Entry* e, int res);
  void WriteDone(Entry* e, int res);

  SpillOptions opt_;
  UniqueFd root_;
  bool is_root_ = false;
  uint32_t readahead_ = 0;
  uint32_t depth_ = 0;
  std::unique_ptr<Staging> staging_;      // guarded by mu
  std::unique_ptr<UringEngine> engine_;   // thread-safe
  uint32_t decode_buf_ = 0;               // scratch buffer of the I/O thread
  uint32_t writes_inflight_ = 0;          // guarded by mu
  uint32_t piece_pins_ = 0;               // guarded by mu: chunks pinned by ReadPieces
  Status writeback_error_;                // guarded by mu: the last write-back failed
  void Unown(uint32_t uid, uint64_t size) {
    auto it = user_bytes_.find(uid);
    if (it == user_bytes_.end()) return;
    it->second -= std::min(size, it->second);
    if (it->second == 0) user_bytes_.erase(it);
  }

  uint64_t logical_ = 0;                  // guarded by mu
  std::unordered_map<uint32_t, uint64_t> user_bytes_;  // guarded by mu: logical bytes per owner
  std::unordered_map<uint32_t, uint64_t> user_entries_;  // guarded by mu: files and dirs per owner
  uint64_t files_ = 0;                    // guarded by mu
  SpillStats stats_;                      // guarded by mu (counters part)
};

class SpillFileImpl final : public SpillFile {
 public:
  // `header` is the file's decoded header; `backing_size` its st_size (at
  // most SlotOffset(ChunkCount(header.size)): the store cut the rest);
  // `bitmap0` group 0's index bitmap (empty: its record was not valid). Reads
  // the index blocks of the other groups.
  SpillFileImpl(std::shared_ptr<StoreCore> core, std::string rel, UniqueFd fd,
                const FileHeader& header, uint64_t backing_size,
                std::span<const uint8_t> bitmap0);
  ~SpillFileImpl() override;

  Result<size_t> Read(uint64_t offset, std::span<uint8_t> out) override;
  Status ReadPieces(uint64_t offset, size_t size, const PieceSink& consume) override;
  Result<size_t> Write(uint64_t offset, std::span<const uint8_t> in) override;
  Status Truncate(uint64_t size) override;
  Status Sync() override;
  uint64_t size() const override { return size_atomic_.load(std::memory_order_acquire); }

  // For the store.
  Status Prefetch();
  Status WriteOut();
  bool Resident();
  Status SetMode(uint32_t mode);
  Status SetOwner(uid_t uid, gid_t gid);
  Result<SpillAttr> Attr();
  void MarkUnlinked();    // REQUIRES: core mu held
  void SetRel(std::string rel);  // REQUIRES: core mu held
  std::string rel();      // takes core mu
  const std::string& RelLocked() const { return rel_; }  // REQUIRES: core mu
  bool Idle();            // no staged chunks, header clean (takes core mu)
  void NeedDirSync() { dir_sync_needed_.store(true); }
  int fd() const { return fd_.get(); }

  // --- Guarded by core mu (StoreCore reads and writes these). ---
  std::map<uint64_t, Entry*> chunks;  // staged chunks by index
  // What is known of each chunk's slot on disk, and the in-memory copy of
  // the written-chunk index (chunk_format.h): 0 (a hole: reads as zeros
  // without I/O), or written: kUnknown (its stored length not known yet) or
  // the stored length. A load of a written chunk that finds no slot is
  // Corruption. Change only through SetDisk / ResizeDisk (they mark the
  // index for writing). Memory: these 4 bytes per chunk of the logical size
  // are the whole in-memory index; the persisted index adds one bit per
  // chunk on disk (a 4 KiB block per kIndexChunks chunks, group 0 in the
  // header block) and a set of at most IndexGroups(chunks) dirty groups.
  static constexpr uint32_t kUnknown = UINT32_MAX;
  std::vector<uint32_t> disk;
  void SetDisk(uint64_t c, uint32_t known);
  void ResizeDisk(uint64_t chunks);
  uint32_t dirty_chunks = 0;  // kDirty + kWriting
  Status write_error;          // first write-back failure, reported by Sync
  uint64_t size_ = 0;
  bool unlinked = false;

 private:
  Status SyncLocked(bool fsync);
  // The start of a read of up to `size` bytes at `offset`: clamps it to the
  // file and starts the loads of its chunks (and a sequential reader's
  // read-ahead) in one batch. Returns the bytes to read (0 at the end).
  // REQUIRES: op_mu_ and core mu held.
  uint64_t BeginRead(uint64_t offset, uint64_t size);
  // Writes the index blocks marked dirty, then the header block (the size
  // and group 0's record). REQUIRES: op_mu_ held, core mu not held.
  Status WriteHeader();
  void LoadIndex(std::span<const uint8_t> bitmap0);  // constructor only
  void MarkGroup(uint64_t group);                     // REQUIRES: core mu
  void GroupBits(uint64_t group, uint8_t* bitmap) const;  // REQUIRES: core mu
  void SetSize(uint64_t size);  // REQUIRES: core mu

  std::shared_ptr<StoreCore> core_;
  StoreCore& c_;
  UniqueFd fd_;
  std::mutex op_mu_;
  std::atomic<uint64_t> size_atomic_{0};
  std::atomic<bool> dir_sync_needed_{false};
  // Guarded by core mu.
  std::string rel_;
  uint32_t mode_ = 0;
  uint32_t uid_ = 0;
  uint32_t gid_ = 0;
  struct timespec mtime_ {};
  bool header_dirty_ = false;
  std::set<uint64_t> index_dirty_;  // groups >= 1 whose index block needs writing
  // Guarded by op_mu_.
  uint64_t seq_next_ = UINT64_MAX;  // end of the last read (sequential detection)
  uint64_t alloc_end_ = 0;          // backing bytes allocated ahead (fallocate)
  void Preallocate(uint64_t size);  // REQUIRES: op_mu_ held, core mu not held
};

// The time a spill file's attributes record (CLOCK_REALTIME, as a disk
// filesystem's mtime).
struct timespec MtimeNow();

}  // namespace epochfs::spill
