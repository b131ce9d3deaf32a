// SpillStore: the writable spill area's files, kept on local SSD.
//
// A spill file `rel` (a relative path under the mount's .spill/, already
// validated by the caller: no "..", no empty or absolute components) is one
// backing file at the same relative path under SpillOptions::dir; directories
// are real directories there. The backing file holds a header block (magic,
// logical size, chunk size), a written-chunk index (one bit per chunk, in
// XXH3-checked records of 16384 chunks) and one fixed slot per chunk of
// chunk_bytes logical bytes: a chunk header (stored length, ZVC mode, logical
// length, XXH3 of the stored bytes) and the chunk's bytes, zero-value
// compressed when that pays (include/epochfs/spill/zvc.h). A slot is written
// and read with O_DIRECT through io_uring (aligned buffers, batched
// submissions, several requests in flight). A chunk never written reads as
// zeros (sparse); a chunk the index records as written whose slot is zeros or
// past the backing file's end (zeroed, truncated) is Corruption, never zeros.
// The index costs no memory beyond the 4 bytes per chunk of a file's size
// the store keeps anyway, and on disk one bit per chunk (a 4 KiB block per
// 16384 chunks); src/spill/chunk_format.h has the layout.
//
// RAM staging: chunks live in a bounded RAM buffer (staging_bytes) — written
// data first, read-ahead on sequential reads, whole files on Prefetch. Dirty
// chunks are written back (least recently used first) once a quarter of
// staging is dirty and whenever staging needs room, on Sync(), on WriteOut()
// and when the store closes. docs/spill.md ("Spill store") has the details.
//
// Durability: after Sync() returns Ok the file's bytes and logical size are on
// the SSD (fdatasync); a restart (SpillStore::Open on the same dir) shows them.
// Data written after the last Sync() may or may not survive a crash, but a
// chunk that reads back is never wrong: a checksum mismatch, or a written slot
// found lost, is Corruption (EIO at the FUSE edge) and a log line. (After a
// power loss, a chunk written after the last Sync() may so read as Corruption
// rather than as its old bytes: its index bit reached the disk, its slot did
// not.) Files of an older format (without the index) open as Unsupported.
//
// Ownership: each file and directory is created owned by the given uid/gid
// (fchown of the backing file when the daemon runs as root) and carries the
// given mode; Stat reports them. Access checks are the caller's job.
//
// Quota: the sum of the logical sizes of all files may not exceed max_bytes
// (0: no quota), and the sum over the files owned by one uid other than 0 may
// not exceed max_bytes_per_user (0: no per-user quota), and the sum over all
// such files not max_bytes_all_users (0: no bound; what is left is root's); a
// write or truncate that would exceed any is NoSpace and changes nothing. A
// uid other than 0 holds at most max_entries_per_user files and directories
// (0: no bound): a create or mkdir past it is NoSpace. Both sums are
// rebuilt from the headers at Open. A chown moves a file's bytes to its new
// owner's sum without a check (only root may chown).
//
// Thread safety: every member of SpillStore and SpillFile is thread-safe. The
// data operations on one file (Read, Write, Truncate, Sync, Prefetch,
// WriteOut) are serialised; different files proceed in parallel.
// SpillFile objects are shared: opening a file that is already open returns
// the same object; a file unlinked while open stays readable and writable
// through it until the last reference goes (its bytes then leave the quota).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs::spill {

struct SpillOptions {
  std::string dir;                         // spill.path; created (mkdir -p) if missing
  uint64_t max_bytes = 0;                  // spill.max_bytes; 0: unlimited
  uint64_t max_bytes_per_user = 0;         // limits.spill_bytes_per_user, resolved; 0: unlimited
  uint64_t max_bytes_all_users = 0;        // users other than root together; 0: unlimited
  uint64_t max_entries_per_user = 0;       // limits.spill_entries_per_user; 0: unlimited
  bool compress = true;                    // spill.compress (zero-value compression)
  uint64_t staging_bytes = 256ull << 20;   // spill.staging (RAM staging buffer)
  uint32_t chunk_bytes = 256u << 10;       // logical bytes per chunk (power of two, >= 4 KiB)
  // io_uring requests in flight, counted in 1 MiB requests like fio's iodepth
  // with --bs=1M: one request per chunk, so with chunks smaller than 1 MiB up
  // to queue_depth * (1 MiB / chunk_bytes) of them.
  uint32_t queue_depth = 16;
  // Chunks read ahead of a sequential reader (0: twice the requests in
  // flight; capped at a quarter of the staging buffer).
  uint32_t readahead_chunks = 0;
  // Register the staging buffers with io_uring (fixed buffers: no page pinning
  // per request; pins the whole staging buffer at Open). Falls back to plain
  // buffers, with a log line, when registration fails.
  bool fixed_buffers = true;
};

struct SpillAttr {
  bool is_dir = false;
  uint64_t size = 0;      // logical size (files); directories: backing st_size
  uint64_t blocks = 0;    // 512-byte blocks allocated on the SSD
  uint32_t mode = 0;      // permission bits and file type (S_IFREG / S_IFDIR)
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 1;
  uint64_t ino = 0;       // backing inode number (stable while the file exists)
  struct timespec atime {}, mtime {}, ctime {};
};

struct SpillDirEntry {
  std::string name;
  bool is_dir = false;
};

struct SpillStats {
  uint64_t files = 0;
  uint64_t logical_bytes = 0;   // Σ logical sizes (what the quota counts)
  uint64_t stored_bytes = 0;    // bytes of chunk slots actually written (after compression)
  uint64_t staging_bytes = 0;   // RAM staging in use
  uint64_t dirty_bytes = 0;     // of which not yet written back
  uint64_t chunks_compressed = 0;
  uint64_t chunks_raw = 0;
  uint64_t ssd_read_bytes = 0;
  uint64_t ssd_write_bytes = 0;
  uint64_t checksum_errors = 0;
  // Write-backs that counted the chunk's zero words in a pass of their own
  // because the writer's copy had not (partial or out-of-order writes); a
  // sequential writer's chunks need none. Not shown by status or metrics.
  uint64_t count_passes = 0;
  // Write-backs of raw chunks that checksummed the chunk in a pass of their
  // own because the writer's copy had not (same cases); not shown either.
  uint64_t checksum_passes = 0;
};

class SpillFile {
 public:
  virtual ~SpillFile() = default;
  // Reads up to out.size() bytes at `offset`; short (possibly 0) at end of file.
  virtual Result<size_t> Read(uint64_t offset, std::span<uint8_t> out) = 0;
  // The bytes Read(offset, a buffer of `size`) would give, handed to
  // `consume` without a copy: pieces in order, pointing into the store's
  // staging buffer. They stay valid and unchanged only while `consume` runs
  // (no other data operation on this file runs meanwhile); `consume` must
  // not call into the store. Called exactly once when the result is OK (with
  // no pieces at the end of the file), never on an error. A request over more
  // chunks than the store pins for one reader (half the staging buffer, at
  // most 512) is copied into a buffer first and handed over as one piece.
  using PieceSink = std::function<void(std::span<const struct iovec> pieces)>;
  virtual Status ReadPieces(uint64_t offset, size_t size, const PieceSink& consume) = 0;
  // Writes all of `in` at `offset` (extending the file; a gap reads as zeros).
  // NoSpace when the quota would be exceeded (nothing written then).
  virtual Result<size_t> Write(uint64_t offset, std::span<const uint8_t> in) = 0;
  // Sets the logical size (shrinks or extends with zeros). NoSpace as Write.
  virtual Status Truncate(uint64_t size) = 0;
  // Makes the file's bytes and size durable on the SSD.
  virtual Status Sync() = 0;
  virtual uint64_t size() const = 0;
};

class SpillStore {
 public:
  virtual ~SpillStore() = default;
  // Creates/opens the store in options.dir (sets up io_uring; IoError/
  // Unsupported with a clear message when io_uring or O_DIRECT is unavailable;
  // InvalidArgument when chunk_bytes is not a power of two in [4 KiB, 64 MiB],
  // queue_depth is not in [1, 4096] or staging holds fewer than two chunks).
  static Result<std::unique_ptr<SpillStore>> Open(const SpillOptions& options);

  virtual Result<SpillAttr> Stat(const std::string& rel) = 0;   // "" is the root
  // Opens `rel`. create: make it if missing (mode, uid, gid for a new file);
  // exclusive with create: Exists if present; truncate: size 0 (counts as a
  // write). NotFound, Exists, IsDirectory, NotDirectory; Corruption when the
  // backing file's header is not a spill header; Unsupported when it was
  // written with another chunk_bytes or in another format version.
  virtual Result<std::shared_ptr<SpillFile>> OpenFile(const std::string& rel, bool create,
                                                     bool exclusive, bool truncate,
                                                     uint32_t mode, uid_t uid, gid_t gid) = 0;
  virtual Status Mkdir(const std::string& rel, uint32_t mode, uid_t uid, gid_t gid) = 0;
  virtual Status Rmdir(const std::string& rel) = 0;     // NotEmpty if not empty; Busy for ""
  virtual Status Unlink(const std::string& rel) = 0;
  // rename(2) semantics: replaces an existing file `to`; open SpillFiles of
  // `from` follow the rename. noreplace: Exists if `to` exists.
  virtual Status Rename(const std::string& from, const std::string& to, bool noreplace) = 0;
  virtual Status Chmod(const std::string& rel, uint32_t mode) = 0;
  virtual Status Chown(const std::string& rel, uid_t uid, gid_t gid) = 0;
  virtual Result<std::vector<SpillDirEntry>> List(const std::string& rel) = 0;

  // Seed 001's scheduler calls these from its own thread.
  // Loads every chunk of `rel` into staging (batched io_uring reads); NotFound.
  virtual Status Prefetch(const std::string& rel) = 0;
  // Writes `rel`'s dirty chunks back and drops all its chunks from staging
  // (Ok when nothing of it is staged; NotFound, IsDirectory).
  virtual Status WriteOut(const std::string& rel) = 0;
  // True when every chunk of `rel` (with size > 0) is in staging (an empty
  // file: true; missing or a directory: false).
  virtual bool Resident(const std::string& rel) = 0;

  virtual SpillStats stats() const = 0;
  // Flushes everything (dirty chunks, headers, fdatasync).
  virtual Status SyncAll() = 0;
};

}  // namespace epochfs::spill
