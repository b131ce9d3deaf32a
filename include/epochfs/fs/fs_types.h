// The fs layer's shared vocabulary: what a session serves (Role), who an
// access belongs to (Attributor) and the names of the mount root's own
// directories. Below both the Filesystem (filesystem.h, the router) and the
// views it routes to (src/fs/*_view.h, spill_fs.h, ...), so that no view
// includes the router. Plain types and constants; no state.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "epochfs/cache/policy.h"

namespace epochfs::fs {

// Resolves which job an access belongs to (control protocol); the default
// attributes nothing.
class Attributor {
 public:
  virtual ~Attributor() = default;
  struct Attribution {
    cache::JobId job = cache::kNoJob;
    int64_t sample = -1;
  };
  // Called once per read-open of a cacheable dataset file by process `pid`
  // (0 when FUSE cannot tell) of user `uid`. Thread-safe.
  virtual Attribution Attribute(pid_t pid, uid_t uid, cache::ObjectId object) {
    (void)pid, (void)uid, (void)object;
    return {};
  }
};

// What a Filesystem serves. One session serves everything (kWhole) unless
// fuse.no_open splits the mount in two (docs/architecture.md, "Hot reads
// without OPEN"): the dataset session answers OPEN and FLUSH with ENOSYS, so
// that the kernel sends neither again on that connection and a hot read costs
// no request; the control directory, whose files need both (a control write is
// taken at close), is a second session mounted on MOUNTPOINT/.epochfs, and
// the spill area, whose files need them too, a third on MOUNTPOINT/.spill.
enum class Role : uint8_t {
  kWhole,    // the dataset, .epochfs/ and .spill/
  kDataset,  // the dataset without OPEN: READs come by inode; .epochfs and
             // .spill are empty directories, the other sessions' mountpoints
  kControl,  // .epochfs/ alone, as the session's root
  kSpill,    // .spill/ alone, as the session's root
};

// The name of the virtual control directory at the mount root.
inline constexpr const char* kControlDirName = ".epochfs";
// The name of the spill area at the mount root.
inline constexpr const char* kSpillDirName = ".spill";

}  // namespace epochfs::fs
