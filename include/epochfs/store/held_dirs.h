// HeldDirs: descriptors of LOWER's directories, held so that a file is
// opened or stat'ed relative to its directory.
//
// A path opened from LOWER's root is looked up one component at a time: on
// a store where every call waits (NFS, an s3 mount, a FUSE passthrough with
// no entry caching) each component is a call, so a file two directories
// down costs three lookups before its open. Relative to a held descriptor of
// its directory it costs one (its name). Used only under consistency
// "immutable": a directory renamed or replaced on LOWER would otherwise go
// on being read through its old descriptor. A directory is opened on its
// first use beneath its parent's held descriptor (the parent held first, so
// each directory costs one lookup, once), a top-level one beneath the root
// (O_PATH, RESOLVE_BENEATH, no symlinks), and a name is resolved beneath it
// (no "..", no symlinks): what is reached through a held directory is what
// the root walk reached when it was opened. A lookup that fails through a
// held directory drops it and its ancestors, and the caller walks from the
// root (whose answer then stands, error included).
//
// Attributes: each directory's, as the kernel holds them just after its
// open looked it up (statx AT_STATX_DONT_SYNC: no call of its own), are kept
// with it while it is held (Attrs), so that a reader's lookup of a
// directory the daemon has opened costs LOWER nothing (KnownLower).
//
// Bound: at most `max_dirs` descriptors (kHeldDirs by default); past it the
// oldest held one is closed for the new one (in the order they were opened).
// Thread safety: thread-safe (one mutex, held only to find or insert; a
// descriptor handed out stays open while its user holds the shared_ptr).
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "epochfs/common/unique_fd.h"

namespace epochfs::store {

inline constexpr size_t kHeldDirs = 64;
// A directory this deep (components) or deeper opens beneath the root, not
// its parent: the parents' chain is opened recursively, so its depth is bounded.
inline constexpr long kParentDepth = 16;

class HeldDirs {
 public:
  explicit HeldDirs(size_t max_dirs = kHeldDirs) : max_(max_dirs) {}

  // The held descriptor of directory `dir` (relative to the root `root`,
  // not empty), opened beneath it now if it is not held yet; null when
  // `dir` cannot be opened (the caller's root walk then reports why).
  std::shared_ptr<const UniqueFd> Get(int root, const std::string& dir);
  // Stops holding `dir` and its ancestors (a lookup beneath it failed: the
  // directory, or one on its way, may have changed); a descriptor closes
  // once its last user lets it go.
  void Drop(const std::string& dir);
  // The attributes of held directory `dir` taken when it was opened, and
  // when (the steady clock); none when it is not held or they could not be
  // taken.
  struct DirAttrs {
    struct stat st;
    std::chrono::steady_clock::time_point at;
  };
  std::optional<DirAttrs> Attrs(const std::string& dir) const;
  // Descriptors held now, and directories opened since the start.
  size_t held() const;
  size_t opened() const;

 private:
  struct Held {
    std::shared_ptr<const UniqueFd> fd;
    std::optional<DirAttrs> attrs;
  };
  // Opens `dir` beneath `root` or its parent's held descriptor; null when
  // it cannot be.
  std::optional<Held> Open(int root, const std::string& dir);

  const size_t max_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Held> fds_;  // guarded by mu_
  std::vector<std::string> order_;  // guarded by mu_: opening order, for the bound
  size_t next_ = 0;                 // guarded by mu_: the slot of order_ replaced next
  size_t opened_ = 0;               // guarded by mu_
};

// `rel` split at its last '/': its directory ("" at the top) and its name.
struct DirAndName {
  std::string dir;
  std::string name;
};
DirAndName SplitRel(const std::string& rel);

// The attributes of open descriptor `fd` as the kernel holds them now,
// without asking LOWER's server again (statx AT_STATX_DONT_SYNC): on a FUSE
// LOWER, those its open's path walk just refreshed (the name's lookup) or,
// within the store's own attribute timeout, its last answer; on NFS, those
// its open revalidated; on a local file system, the inode's. 0, or -1 and
// errno.
int HeldAttrs(int fd, struct stat* st);

}  // namespace epochfs::store
