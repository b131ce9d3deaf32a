// Listing: directory listings of a session (OPENDIR, READDIR, READDIRPLUS,
// RELEASEDIR) for dataset and control directories; the spill area lists its
// own (spill_fs.h) and is only an entry of the mount root here.
//
// An open directory is a snapshot (OpenDir): the lower directory's names and
// types, or the control directory's entries with their attributes; at the
// mount root also `.epochfs` and `.spill`, which shadow lower entries of those
// names. A listing stats nothing itself: a readdirplus reply stats, in one
// batch, the lower entries it returns (StatForPlus), and in the "auto" mix
// the first reply is short and bare (kFirstPlusReplyBytes).
//
// Owns nothing but the snapshots' handles' meaning; the handle and inode
// tables are the Filesystem's (FsContext), the control entries the
// ControlView's.
// Thread safety: ops run concurrently; a snapshot is guarded by OpenDir::mu.
#pragma once

#include <fuse_lowlevel.h>

#include <memory>
#include <string>

#include "control_view.h"
#include "fs_common.h"
#include "spill_fs.h"

namespace epochfs::fs {

class Listing {
 public:
  // `spill`: the spill area's ops (null without one, or until the store is
  // set); `spill_mountpoint`: `.spill` is another session's mountpoint.
  // REQUIRES: every reference outlives the Listing.
  Listing(const FsContext& ctx, ControlView& control, const std::unique_ptr<SpillFs>& spill,
          bool spill_mountpoint)
      : ctx_(ctx), control_(control), spill_(spill), spill_mountpoint_(spill_mountpoint) {}

  // OPENDIR of dataset or control node `v` (inode `ino`).
  void Open(fuse_req_t req, fuse_ino_t ino, const NodeView& v, fuse_file_info* fi,
            const store::AnswerScope& answerable);
  // READDIR (plus: READDIRPLUS) of open directory `fi->fh`.
  void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi,
            bool plus);
  void Release(fuse_req_t req, fuse_file_info* fi);

 private:
  void StatForPlus(fuse_req_t req, const std::string& dir_path, OpenDir& dir, size_t size,
                   off_t off);

  const FsContext& ctx_;
  ControlView& control_;
  const std::unique_ptr<SpillFs>& spill_;
  const bool spill_mountpoint_;
};

}  // namespace epochfs::fs
