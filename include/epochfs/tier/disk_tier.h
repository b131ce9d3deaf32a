// DiskTier: the dataset cache's tier on a local SSD directory
// (cache.disk_path; docs/disk_tier.md). It keeps whole lower files and blocks
// of big ones (the objects the RAM tier knows, store/object.h) as one file
// each (disk_format.h), read and written through io_uring (the spill area's
// engine, spill/uring_engine.h), every 64 KiB block checked against its
// XXH3 on every read: a copy that does not verify is counted
// (checksum_errors), dropped, and never served. Copies are keyed by the
// lower file's identity (store::LowerKey: path, range, and the version as
// the RAM tier has it, store::VersionRule: size, mtime and ctime in ns, the
// inode number but on a FUSE LOWER), so a file changed on LOWER while nothing
// was mounted, even replaced by a copy of the same size and mtime, is never
// served from its old copy (`stale`).
//
// Warm across restarts: the index is a checksummed journal (disk_journal.h),
// replayed at Open; without one (or with a foreign one) the directory is
// scanned and the index written anew. An index of format 1 (copies keyed by
// size and mtime only) is not trusted: its copies are dropped at Open with a
// log line, their files swept. RAM per cached object: the index entry
// below, measured at ~148 bytes plus the path's length (184 bytes for a
// 36-byte ImageNet path; tests/unit/tier, IndexBytesPerObject); on disk
// 77 bytes plus the path per journal record.
//
// The directory is the daemon's alone: Open refuses a missing or unwritable
// one with a one-line error naming it, creates its files 0600 and data/
// 0700, and holds an flock on DIR/lock, so that a second daemon on the same
// directory is refused ("in use by another epochfs daemon").
//
// Faults never fail a read: a full disk (ENOSPC) stops admission ("full": the
// budget shrinks below what is held, so the placement evicts; later writes
// are admitted again once one succeeds); an I/O error marks the tier
// "failed": from then on it serves nothing and writes nothing, and the cache
// front reads from RAM or LOWER; stats show the state. So does a disk call
// not answered within `timeout` (a disk that stops answering).
//
// Size: cache.disk_size bytes, or "auto": the filesystem's free space plus
// what the tier holds, less cache.disk_margin (default 10 % of the
// filesystem) and less what a spill area on the same filesystem may still
// take (`reserved`), re-checked every 64 MiB written and every second of
// writing. A new size reaches the placement as news (SecondTier::TakeNews).
//
// Lifecycle: Open (checks, lock, index), Start (the io_uring engine and the
// writer thread), Stop (writes queued so far land, the index is compacted
// when mostly dead), the destructor Stops. Open is bounded too: its work runs
// on a thread of its own, each of its disk calls watched (call_watch.h); one
// not answered within `start_timeout` gives it up (TimedOut; the thread is
// left to finish, and then closes what it opened), and the caller may go on
// with FailedAtStart's tier instead: no tier, state "failed", stats alike.
// Reads: files up to kDirectMaxBytes whole with O_DIRECT into a reused
// aligned buffer (direct_buffers.h), verified there and copied once into the
// object; the page cache is not involved, so no copy through it and no pages
// of it to reclaim. Larger files, and every file once the filesystem refuses
// O_DIRECT (EINVAL: tmpfs before Linux 6.6, a block larger than a page), are
// read buffered into the object's bytes. Writes are buffered.
// Thread safety: every public method is thread-safe; mu_ guards the index
// and the news, and is never held across a disk call: readers make their own
// (bounded, disk_io.h), the writer thread makes the rest (writes, the
// journal, removals). A reader never waits for the writer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/common/unique_fd.h"
#include "epochfs/store/second_tier.h"
#include "epochfs/tier/call_watch.h"
#include "epochfs/tier/direct_buffers.h"
#include "epochfs/tier/disk_io.h"
#include "epochfs/tier/disk_journal.h"

namespace epochfs::tier {

struct DiskTierOptions {
  std::string path;
  uint64_t size = 0;  // bytes (size_auto false)
  bool size_auto = false;
  // Kept free on the filesystem ("auto"): margin bytes, or margin_percent of
  // the filesystem's size when margin_is_percent.
  uint64_t margin = 0;
  double margin_percent = 10.0;
  bool margin_is_percent = true;
  // Bytes another user of the same filesystem may still take (the spill
  // area's bound less what it holds), subtracted from "auto". May be empty.
  std::function<uint64_t()> reserved;
  uint32_t queue_depth = 16;
  // The bound on each disk call (cache.disk_timeout; 0: none): a call not
  // answered within it marks the tier failed (disk_io.h).
  std::chrono::milliseconds timeout{0};
  // The bound on each disk call of Open (the daemon: cache.disk_timeout too;
  // 0: none): one not answered within it gives Open up (TimedOut).
  std::chrono::milliseconds start_timeout{0};
  uint64_t max_queued_bytes = 256ull << 20;  // writes waiting; more are skipped
  // Reads with O_DIRECT where the filesystem takes it (false: buffered
  // reads only; tests and measurements of the two).
  bool direct_reads = true;
};

class DiskTier final : public store::SecondTier {
 public:
  enum class State : uint8_t { kOk, kFull, kFailed };

  static Result<std::unique_ptr<DiskTier>> Open(const DiskTierOptions& options);
  // A tier that failed before it held anything (its start did not answer):
  // serves and writes nothing, state "failed"; Start and Stop do nothing.
  static std::unique_ptr<DiskTier> FailedAtStart(const DiskTierOptions& options,
                                                 const std::string& why);
  ~DiskTier() override;
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  Status Start();
  // Queued writes land (or fail) and the writer returns; false when the disk
  // does not answer (a call was given up on, or the writer did not return
  // within the bound and a second): then the tier must not be destroyed,
  // its last calls (a close, the journal's cut) would wait on the disk too;
  // the daemon, exiting, leaks it. The destructor Stops and, if that fails,
  // waits for the writer and the disk after all.
  bool Stop();

  store::ObjectRef Read(cache::ObjectId id, const store::LowerKey& key,
                        const store::Version& v) override;
  bool Write(cache::ObjectId id, const store::LowerKey& key, store::ObjectRef obj) override;
  void Erase(cache::ObjectId id) override;
  bool HasNews() const override { return news_flag_.load(std::memory_order_acquire); }
  store::TierNews TakeNews() override;
  store::TierStats stats() const override;
  // Waits until every write queued so far has landed (or failed). Tests.
  void Drain();
  State state() const { return state_.load(std::memory_order_relaxed); }
  // Where the object file of `id` is, "" if not held (tests flip its bytes).
  std::string FileOf(cache::ObjectId id) const;
  // RAM held per indexed object by the index, estimated from its layout.
  static size_t EntryBytes(size_t path_len);
  // Reads served through O_DIRECT (tests; the rest were buffered).
  uint64_t direct_reads() const { return c_.direct_reads.load(std::memory_order_relaxed); }
  // Object files up to this size (header, data, sums) are read with O_DIRECT.
  static constexpr uint64_t kDirectMaxBytes = 2ull << 20;

 private:
  explicit DiskTier(DiskTierOptions options)
      : opt_(std::move(options)), direct_(opt_.direct_reads) {}
  struct Entry {
    uint64_t file_no = 0;
    uint64_t data_len = 0;
    store::LowerKey key;
    bool ready = false;  // written whole, in the journal
  };
  struct Job {
    cache::ObjectId id = 0;
    uint64_t file_no = 0;
    store::LowerKey key;
    store::ObjectRef obj;
  };

  // Open's work, on the caller's thread; `watch` (may be null) marks its
  // disk calls.
  static Result<std::unique_ptr<DiskTier>> OpenNow(const DiskTierOptions& options,
                                                   CallWatch* watch);
  Status Load();                        // the index: journal, else a scan
  std::vector<JournalEntry> Scan();     // rebuilds from the object files
  void SweepOrphans();                  // files the index does not name
  void WriterLoop();
  void WriteOne(Job& job);
  void Remove(uint64_t file_no);  // its DEL, then its file (the writer's)
  void JournalSizes();            // the journal's sizes for stats (the writer's)
  std::string NoAnswer() const;   // why a call given up on failed the tier
  std::string PathOf(uint64_t file_no) const;
  // REQUIRES: mu_ held. Drops `id` from the index (and its file); `lost`:
  // the placement must hear of it.
  void DropLocked(cache::ObjectId id, bool lost);
  void LostLocked(cache::ObjectId id);
  void Fail(const std::string& why);
  void Full();
  void Recheck(bool force);

  const DiskTierOptions opt_;
  CallWatch* watch_ = nullptr;  // Open's (OpenNow); null after
  UniqueFd lock_fd_;
  std::unique_ptr<DiskIo> io_;
  std::thread writer_;
  std::atomic<State> state_{State::kOk};

  mutable std::mutex mu_;
  std::condition_variable cv_;  // the writer's queue and Drain
  std::unordered_map<cache::ObjectId, Entry> index_;  // guarded by mu_
  // The writer's after Start (Load's before, Stop's after): never called
  // under mu_. Its sizes for stats in journal_bytes_, journal_written_.
  std::unique_ptr<Journal> journal_;
  std::atomic<uint64_t> journal_bytes_{0}, journal_written_{0};
  uint64_t next_file_no_ = 1;
  uint64_t used_ = 0;     // data bytes indexed (written and queued)
  uint64_t on_disk_ = 0;  // of used_, written
  uint64_t objects_ = 0;  // written (ready)
  uint64_t budget_ = 0;
  std::deque<Job> queue_;
  std::vector<uint64_t> removals_;  // files to DEL and remove (the writer's)
  bool writer_exited_ = false;
  uint64_t queued_bytes_ = 0;
  bool writing_ = false;
  bool stop_ = false;
  store::TierNews news_;
  std::atomic<bool> news_flag_{false};
  uint64_t since_check_ = 0;
  uint64_t last_check_ns_ = 0;
  // Reads are O_DIRECT until the filesystem refuses one (EINVAL), buffered
  // after; into buffers kept for reuse.
  std::atomic<bool> direct_;
  DirectBuffers direct_buffers_{16, kDirectMaxBytes};

  struct Counters {
    std::atomic<uint64_t> hits{0}, reads_bytes{0}, writes{0}, writes_bytes{0}, checksum_errors{0},
        stale{0}, write_errors{0}, direct_reads{0};
  } c_;
};

}  // namespace epochfs::tier
