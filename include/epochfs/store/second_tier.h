// SecondTier: what the cache front needs of a tier below RAM (the disk tier,
// src/tier/disk_tier.h), and LowerKey, the identity every tier files bytes
// under.
//
// A tier holds copies of LOWER's bytes keyed by the lower file's identity:
// its path relative to LOWER, the range (a block of a big file; 0/0 the whole
// file) and the version it copied: a Version as VersionRule reads it (size,
// mtime and ctime in ns, and the inode number where LOWER keeps its numbers,
// version.h), compared whole, as the RAM tier compares it. So a copy renamed
// over the file with its size and mtime (`cp -p`, `rsync -t`) is another
// version (its ctime). It never serves bytes of another version, nor bytes
// it cannot verify.
//
// The cache front asks Read before it reads LOWER, and Write/Erase as the
// placement (cache/tier_placement.h) decides. What the tier learns on its own
// (objects lost to a checksum error, a failed write, a stale copy; objects
// found on disk at start; a new size for "auto") it hands over with TakeNews,
// which the cache front drains under its policy lock, so that the placement
// and the tier agree.
//
// Thread safety: every method is thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "epochfs/cache/policy.h"
#include "epochfs/store/object.h"
#include "epochfs/store/version.h"

namespace epochfs::store {

struct LowerKey {
  std::string rel;       // path relative to LOWER (normalised, as ObjectIdOf)
  uint64_t offset = 0;   // a block: its range; 0/0 the whole file
  uint64_t length = 0;
  Version version;       // the lower file's version (VersionRule::Of)
  bool operator==(const LowerKey&) const = default;
  // The object id this process files the key's bytes under (ObjectIdOf or
  // BlockIdOf).
  cache::ObjectId Id() const {
    return length == 0 ? ObjectIdOf(rel) : BlockIdOf(rel, offset, length);
  }
  // The copy is of version `v` (version.h's rule: every field equal).
  bool Matches(const Version& v) const { return version == v; }
};

struct TierStats {
  uint64_t budget = 0;          // bytes the tier may hold now
  uint64_t bytes = 0;           // bytes of the objects held (their data)
  uint64_t objects = 0;
  uint64_t hits = 0;            // reads served from the tier
  uint64_t reads_bytes = 0;     // bytes read from the tier's disk
  uint64_t writes = 0;          // objects written
  uint64_t writes_bytes = 0;    // bytes written to the tier's disk (files and index)
  uint64_t checksum_errors = 0;  // reads whose bytes did not verify (read again from LOWER)
  uint64_t stale = 0;           // copies of another version than LOWER's, dropped
  uint64_t write_errors = 0;    // writes that failed (ENOSPC included)
  uint64_t index_bytes = 0;     // the on-disk index (journal) now
  uint64_t queued_bytes = 0;    // data waiting to be written (writes land in the background)
  std::string state;            // "ok", "full" (not admitting), "failed" (not used)
};

// What the tier learned since the last TakeNews.
struct TierNews {
  std::vector<cache::ObjectId> lost;  // no longer held: tell the placement
  struct Found {
    cache::ObjectId id = 0;
    uint64_t size = 0;
    cache::ObjectId file = 0;  // a block's file, else 0
  };
  std::vector<Found> found;  // held at start (warm): the placement decides
  bool budget_changed = false;
  uint64_t budget = 0;
};

class SecondTier {
 public:
  virtual ~SecondTier() = default;
  // The verified bytes of `key`'s range, as an Object of id `id` and
  // version `v` (LOWER's now, the caller's stat); nullptr when the tier does
  // not hold them (a copy whose version is not `v`: stale; a checksum error,
  // a failed tier: counted, and the copy dropped).
  virtual ObjectRef Read(cache::ObjectId id, const LowerKey& key, const Version& v) = 0;
  // Writes a copy of `obj` (its data) under `key`, in the background. False
  // when not even queued (full queue, failed tier): then it is lost (news).
  virtual bool Write(cache::ObjectId id, const LowerKey& key, ObjectRef obj) = 0;
  // Drops the copy of `id`, if any.
  virtual void Erase(cache::ObjectId id) = 0;
  // True while there is news (cheap).
  virtual bool HasNews() const = 0;
  virtual TierNews TakeNews() = 0;
  virtual TierStats stats() const = 0;
};

}  // namespace epochfs::store
