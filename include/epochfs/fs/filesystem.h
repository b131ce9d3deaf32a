// Filesystem: the FUSE low-level adapter. It owns the inode table and turns
// kernel requests into calls on the lower tree, the cache front and the
// control plane. Nothing outside src/fs sees a FUSE type.
//
// Contract of every op: it never throws and ends in exactly one fuse_reply_*.
// The dataset view is read-only: every modifying op outside `.epochfs/` and
// the spill area `.spill/` (when configured; src/fs/spill_fs.h) replies EROFS.
// Thread safety: ops run concurrently on the session's worker threads.
#pragma once

#include <cstdint>
#include <memory>

#include "epochfs/config/config.h"
#include "epochfs/control/control_plane.h"
#include "epochfs/store/cache_front.h"
#include "epochfs/store/lower.h"

namespace epochfs::spill {
class SpillStore;
}

struct fuse_lowlevel_ops;
struct fuse_session;

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

struct FsParts {
  const Config* config = nullptr;
  const store::Lower* lower = nullptr;
  store::CacheFront* cache = nullptr;
  control::ControlPlane* control = nullptr;
  Attributor* attributor = nullptr;
  // The mount has a writable spill area (.spill/ at the mount root); its
  // store is handed over with SetSpillStore before the first request (to the
  // kSpill session, when the mount is split).
  bool spill = false;
  // `-o max_read=BYTES`: the largest READ the kernel may send (0: its
  // default). libfuse requires INIT to agree with the mount option.
  unsigned max_read = 0;
  Role role = Role::kWhole;
};

class Filesystem {
 public:
  // REQUIRES: every pointer in `parts` outlives the Filesystem.
  static Result<std::unique_ptr<Filesystem>> Create(const FsParts& parts);
  virtual ~Filesystem() = default;
  // The ops table to hand to fuse_session_new; userdata is this Filesystem.
  virtual const fuse_lowlevel_ops& ops() const = 0;
  // Called by Session once mounted / before unmounting: starts and stops the
  // work that talks to the kernel outside requests (cache invalidation).
  virtual void Attach(fuse_session* se) = 0;
  virtual void Detach() = 0;
  // Raises the mount's kernel readahead window (sysfs file `ra_file`) to
  // `kib` once the kernel has processed INIT (which resets it): large files
  // then arrive in READs of up to `kib` instead of 128 KiB. Best effort.
  virtual void SetReadahead(const std::string& ra_file, unsigned kib) = 0;
  // The spill area's store (FsParts::spill). Called once, before the session
  // serves requests (the daemon opens the store after daemonizing).
  // REQUIRES: `store` outlives the Filesystem.
  virtual void SetSpillStore(spill::SpillStore* store) = 0;
  // The control directory at `control_path` ("jobs/NAME") went away without
  // an rmdir through the mount (the daemon reaped an orphaned job): tells the
  // kernel, which then drops its entry and forgets the nodes under it, so
  // that their inode-table entries go too. Best effort; a no-op before Attach
  // or when the kernel never looked the directory up. Must not be called from
  // a request handler, nor with the control plane's locks held.
  virtual void ControlEntryRemoved(const std::string& control_path) = 0;
};

// The name of the virtual control directory at the mount root.
inline constexpr const char* kControlDirName = ".epochfs";
// The name of the spill area at the mount root.
inline constexpr const char* kSpillDirName = ".spill";

}  // namespace epochfs::fs
