// Filesystem: the FUSE low-level adapter. It owns the inode table and turns
// kernel requests into calls on the lower tree, the cache front and the
// control plane (src/fs/router.h routes each request to the view that serves
// it). Nothing outside src/fs sees a FUSE type.
//
// Contract of every op: it never throws and its request gets exactly one
// answer (src/fs/reply.h, callback_guard.h).
// The dataset view is read-only: every modifying op outside `.epochfs/` and
// the spill area `.spill/` (when configured; src/fs/spill_fs.h) replies EROFS.
// Thread safety: ops run concurrently on the session's worker threads.
#pragma once

#include <cstdint>
#include <memory>

#include "epochfs/config/config.h"
#include "epochfs/control/control_plane.h"
#include "epochfs/fs/fs_types.h"
#include "epochfs/store/cache_front.h"
#include "epochfs/store/known_lower.h"
#include "epochfs/store/lower.h"

namespace epochfs::spill {
class SpillStore;
}

struct fuse_lowlevel_ops;
struct fuse_session;

namespace epochfs::fs {

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
  // What is known of LOWER's names and attributes (store/known_lower.h),
  // made with KnownLowerOptionsOf(*config); null: the Filesystem makes its own.
  const store::KnownLower* known = nullptr;
};

// The options of the session's KnownLower: remembered under "immutable";
// on an allow_other mount re-checked once per fuse.permission_timeout
// (docs/security.md).
store::KnownLowerOptions KnownLowerOptionsOf(const Config& cfg);

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

}  // namespace epochfs::fs
