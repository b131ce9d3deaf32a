// Lower: read-only access to the dataset directory on slow storage.
//
// Every path is relative to the lower root ("" is the root itself) and is
// resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a lower path
// never escapes the root and never follows a symlink, even if the lower tree
// changes underneath. Reads drop the lower file's pages from the host page
// cache afterwards (POSIX_FADV_DONTNEED), so the only cached copy of a sample
// is the one epochfs accounts for.
// Every operation on LOWER goes through a LowerGate when `gate.timeout` is
// not 0 (lower.timeout): it is given up on with TimedOut after the bound, or
// with Interrupted when the calling request is (CancelScope). Large reads and
// listings are gated in pieces (8 MiB, 512 entries), so the bound is on each
// piece, not on the whole file.
// Errors: NotFound (ENOENT, ENOTDIR, ELOOP), PermissionDenied, IoError
// (everything else, including a file that shrank while being read),
// TimedOut, Interrupted.
// With `held_dirs` (consistency "immutable" only: held_dirs.h), files are
// opened and stat'ed relative to a held descriptor of their directory: one
// lookup on LOWER instead of one per path component.
// Thread safety: all methods are thread-safe.
#pragma once

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "epochfs/common/access_rule.h"
#include "epochfs/common/status.h"
#include "epochfs/common/unique_fd.h"
#include "epochfs/store/held_dirs.h"
#include "epochfs/store/lower_gate.h"
#include "epochfs/store/lower_health.h"
#include "epochfs/store/version.h"

namespace epochfs::store {

// What a path that does not exist on LOWER gives ("REL: No such file or
// directory", NotFound): also what the daemon answers for a path a user may
// not reach, so that the two cannot be told apart.
Status MissingOnLower(const std::string& rel);

struct DirEntry {
  std::string name;
  mode_t type = 0;  // S_IFREG, S_IFDIR, ... from readdir's d_type; 0: unknown
};

class Lower {
 public:
  // Opens ROOT, which must be a readable directory (not through the gate).
  // `held_dirs`: how many directory descriptors to hold (0: none; see above).
  static Result<std::unique_ptr<Lower>> Open(const std::string& root,
                                             LowerGateOptions gate = {std::chrono::milliseconds(0)},
                                             size_t held_dirs = 0);

  const std::string& root() const { return root_path_; }

  // `kind` is kLookup for a stat that answers a LOOKUP (lower_health.h).
  Result<struct stat> Stat(const std::string& rel, LowerCall kind = LowerCall::kStat) const;
  // Stat of each path (one result each), gated in batches: a long sample
  // list costs one thread hop per 1024 paths, not per path.
  std::vector<Result<struct stat>> StatMany(const std::vector<std::string>& rels) const;
  // fstat of a file this Lower opened.
  Result<struct stat> FStat(int fd) const;
  // Entries of directory `rel`, without "." and "..": names and types only
  // (no stat: a listing of a big directory costs one getdents per ~1000
  // entries). In one gated operation.
  Result<std::vector<DirEntry>> List(const std::string& rel) const;
  // lstat of entries `names` of directory `rel`, one result each, gated in
  // pieces; nullopt for an entry that is gone.
  Result<std::vector<std::optional<struct stat>>> StatEntries(
      const std::string& rel, const std::vector<std::string>& names) const;
  Result<std::string> ReadLink(const std::string& rel) const;
  Result<struct statvfs> StatFs() const;

  // Opens regular file `rel` for reading.
  Result<UniqueFd> OpenFile(const std::string& rel) const;
  // A whole file in one operation (one gate hand-off, not one per call: on a
  // store where every call waits, a load's calls still wait in turn, but it
  // costs the daemon one thread hop): opens `rel` and fstat's it, and when it
  // is a regular file of at most `max_bytes` and of one read piece (8 MiB)
  // that `as` may read (null: anyone), reads it as ReadWhole does (`data`:
  // its bytes, or ReadWhole's error): no byte is read for a user who may not.
  // Otherwise (and always with `max_bytes` 0) `data` is empty and the caller
  // reads `fd` as it needs. Counted
  // as an open, a stat and (with data) a read. Errors: OpenFile's and FStat's.
  // `attrs`: kFresh fstat's the file opened (on a FUSE or network LOWER, a
  // call to its server); kHeld takes the attributes the kernel holds of it
  // (statx AT_STATX_DONT_SYNC: no call, not counted as a stat), as fresh as
  // the open's own lookup of the name, or the store's attribute cache
  // allows. Either is taken after the open and before the read: the bytes
  // read are never older than the version they are labelled with (at worst
  // newer, and then the next stat that finds the newer version loads them
  // again), and a size that is not the file's fails the read (IoError: the
  // file "grew" or "shrank"), never a short or long copy; with kHeld such a
  // file is fstat'ed and, when LOWER says it changed, read again once.
  enum class Attrs { kFresh, kHeld };
  struct OpenedFile {
    UniqueFd fd;
    struct stat st {};
    std::optional<Result<std::vector<char>>> data;
    bool stat_asked = false;  // LOWER was asked for `st` (kFresh, or kHeld's size was not the file's)
  };
  Result<OpenedFile> OpenAndRead(const std::string& rel, uint64_t max_bytes,
                                 std::shared_ptr<const Credentials> as = nullptr,
                                 Attrs attrs = Attrs::kFresh) const;
  // FStat, ReadWhole and ReadAt work, when gated, on a duplicate of `fd` that
  // they own: a call given up on may run on after the caller closed `fd`.
  // Reads exactly `size` bytes from the start of `fd`; a file shorter or
  // longer than that is IoError. The last read asks for one byte past
  // `size`, so that the end is checked without a read of its own: a file
  // of one piece is one read.
  Result<std::vector<char>> ReadWhole(int fd, uint64_t size) const;
  // pread of up to `len` bytes at `off`; fewer at the end of the file.
  Result<std::vector<char>> ReadAt(int fd, size_t len, uint64_t off) const;

  // Starts the gate's worker threads (REQUIRES: any fork done); until then
  // calls run unbounded on the caller's thread.
  void StartGate();
  // Directories opened to be held since the start (0 without held_dirs).
  size_t held_dirs_opened() const;
  // The attributes of directory `dir` taken when it was opened to be held,
  // while it is (HeldDirs::Attrs; none without held_dirs). No LOWER call.
  std::optional<HeldDirs::DirAttrs> HeldDirAttrs(const std::string& dir) const;
  // The gate's counters (all 0 without a gate).
  LowerGateCounters gate_counters() const;
  // LowerGate::ReleasePrefetch (0 without a gate).
  uint32_t ReleasePrefetch() const;
  // Calls by kind, and whether LOWER is answering (lower_health.h).
  const LowerHealth& health() const { return *health_; }
  // How a file's version is read from its attributes on this LOWER
  // (version.h: its inode numbers count only where they are stable).
  const VersionRule& versions() const { return versions_; }

 private:
  Lower(std::string path, UniqueFd fd)
      : root_path_(std::move(path)), root_fd_(std::make_shared<UniqueFd>(std::move(fd))) {}
  // Runs fn() -> Result<T> through the gate (directly without one), counted
  // as `n` calls of `kind`, its outcome told to health_.
  template <class T, class F>
  Result<T> Gated(LowerCall kind, uint64_t n, const std::string& what, F fn) const;

  std::string root_path_;
  // Shared with operations still running on the gate's workers after their
  // caller gave up, which may outlive this Lower.
  std::shared_ptr<UniqueFd> root_fd_;
  // Shared likewise; null without held_dirs.
  std::shared_ptr<HeldDirs> held_;
  // Shared with the operations and the gate's watchdog, which may outlive this Lower.
  std::shared_ptr<LowerHealth> health_ = std::make_shared<LowerHealth>();
  std::unique_ptr<LowerGate> gate_;
  VersionRule versions_;
};

}  // namespace epochfs::store
