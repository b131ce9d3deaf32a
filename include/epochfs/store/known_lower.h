// KnownLower: what the daemon knows of LOWER's names, attributes and
// listings, so that under consistency "immutable" a hit costs LOWER nothing.
//
// Under "immutable" LOWER's files do not change while mounted. A file whose
// bytes are cached is still looked up and stat'ed by the kernel each time its
// entry and attribute timeouts pass (and after the kernel forgets its inode):
// on NFS each of those is a round trip to the server, and while the server
// hangs it is a cached file that cannot be read. So the attributes of every
// path stat'ed, and the names of every directory listed, are remembered and
// answer later LOOKUPs, GETATTRs, listings and opens:
//   - remembered and younger than `max_age` (for ever by default): from
//     memory, no LOWER call;
//   - remembered but older (an allow_other mount re-checks each file's owner
//     and mode once per fuse.permission_timeout: docs/security.md): a stat
//     of LOWER, on a gate worker, never inline, given up on after
//     `recheck_grace` (not lower.timeout: an answer is in hand); if it times
//     out or fails with an I/O error, or LOWER is already known to be down
//     (lower_health.h: then without asking), the last known attributes
//     answer. A re-check given up on is a timeout of LOWER's: LOWER is down
//     from it (logged), so the next calls answer at once;
//   - not remembered: a directory the loads hold open (held_dirs.h) is
//     answered with the attributes its open saw, and remembered from then
//     (a declared job's first reads look up their directories while the
//     prefetch opens them: no call each); anything else, a stat of LOWER,
//     as without KnownLower.
// A listing's attributes (StatEntries, for a readdirplus reply) are optional:
// while LOWER is down none are asked for (the entries go without, and the
// kernel looks up the names it needs, answered as above), and a re-check of
// remembered ones is given up on after `recheck_grace` likewise.
// A path LOWER says does not exist is forgotten, never remembered as missing
// (a file added to LOWER is found at its next lookup). Under "open", or with
// `remember` false, every call goes to LOWER.
//
// Memory: each remembered path costs ~100 bytes (a 64-bit key, the seeded
// hash of the path, and ~56 bytes of attributes: mode, owner, group, links,
// size, blocks, three times, inode number, when it was checked) and each
// remembered listing ~40 bytes plus its names. At most `max_entries` paths
// and listed names together are remembered (cache.metadata_entries); past
// the bound nothing more is, and calls for what is not remembered go to LOWER.
// Thread safety: thread-safe (one shared_mutex; answers from memory share it).
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/store/lower.h"

namespace epochfs::store {

struct KnownLowerOptions {
  bool remember = false;                 // consistency "immutable"
  // How long LOWER's answer stands; max(): for ever.
  std::chrono::milliseconds max_age = std::chrono::milliseconds::max();
  uint64_t max_entries = 2'000'000;      // cache.metadata_entries
  // How long a re-check of remembered attributes waits for LOWER before the
  // last known ones answer; 0: lower.timeout.
  std::chrono::milliseconds recheck_grace = std::chrono::milliseconds(0);
};

struct KnownLowerCounters {
  uint64_t paths = 0;      // attributes remembered, now
  uint64_t names = 0;      // names of remembered listings, now
  uint64_t answered = 0;   // calls answered from memory
  uint64_t last_known = 0; // of those, answered with last known attributes because LOWER failed
  uint64_t full = 0;       // paths or listings not remembered: the bound was reached
  uint64_t ahead = 0;      // names dealt with by Ahead (stat'ed, or already remembered)
};

class KnownLower {
 public:
  // REQUIRES: `lower` outlives the KnownLower.
  KnownLower(const Lower& lower, KnownLowerOptions options);

  // lstat of `rel` as described above; `kind` as Lower::Stat's. `age_s`, if
  // given, is set to the seconds since LOWER gave the attributes returned
  // when they may be re-checked (a finite max_age), else to 0: the caller
  // takes it off the time it lets the kernel keep them.
  Result<struct stat> Stat(const std::string& rel, LowerCall kind,
                           double* age_s = nullptr) const;
  // The entries of directory `rel`, as Lower::List, remembered under "immutable".
  Result<std::vector<DirEntry>> List(const std::string& rel) const;
  // Lower::StatEntries, answered from memory when every name is remembered
  // (and young enough); else from LOWER, and the answers are remembered.
  // TimedOut without a LOWER call while LOWER is down (above).
  Result<std::vector<std::optional<struct stat>>> StatEntries(
      const std::string& rel, const std::vector<std::string>& names) const;

  // `st`: the attributes of regular file `rel` as a load read them from LOWER
  // (its fstat): remembered as a stat's would be, so that a prefetch brings
  // the file's attributes with its bytes and the reader's lookup costs LOWER
  // nothing. Nothing under "open".
  void Learn(const std::string& rel, const struct stat& st) const;
  // The attributes of `rel` fetched ahead of a reader's lookup (the
  // prefetcher's stat-ahead of a declared file it will not load): a LOWER
  // stat (kind kLookup) remembered as Stat's, unless attributes young
  // enough are remembered already (then nothing, and no `answered` is
  // counted). Counted in `ahead` once done, whatever LOWER said. Nothing
  // under "open" (nothing would be remembered): not even counted.
  void Ahead(const std::string& rel) const;
  // `rel` was seen to have changed on LOWER (a load found another version
  // than its remembered attributes say): its attributes are forgotten, and
  // the next call asks LOWER. "immutable" trusts LOWER not to change; this
  // keeps a change that happens anyway from being refused for ever.
  void Forget(const std::string& rel) const;

  KnownLowerCounters counters() const;

 private:
  struct Attr {  // the attributes kept of a path (see Memory above)
    uint64_t size = 0, blocks = 0, ino = 0;
    int64_t atime_s = 0, mtime_s = 0, ctime_s = 0;
    uint32_t atime_ns = 0, mtime_ns = 0, ctime_ns = 0;
    uint32_t mode = 0, uid = 0, gid = 0, nlink = 0;
    int64_t checked_ms = 0;  // steady clock, when LOWER gave them
  };
  static Attr Pack(const struct stat& st, int64_t now_ms);
  static struct stat Unpack(const Attr& a);
  int64_t NowMs() const;
  bool Young(const Attr& a, int64_t now_ms) const;
  void Remember(const std::string& rel, const struct stat& st, int64_t now_ms) const;

  const Lower& lower_;
  const KnownLowerOptions opt_;
  mutable std::shared_mutex mu_;
  mutable std::unordered_map<uint64_t, Attr> attrs_;                   // guarded by mu_
  mutable std::unordered_map<uint64_t, std::vector<DirEntry>> lists_;  // guarded by mu_
  mutable uint64_t names_ = 0;                                         // guarded by mu_
  mutable std::atomic<uint64_t> answered_{0}, last_known_{0}, full_{0}, ahead_{0};
};

}  // namespace epochfs::store
