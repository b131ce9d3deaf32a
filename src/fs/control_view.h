// ControlView: the FUSE ops of the control tree MOUNTPOINT/.epochfs/
// (epochfs(8) CONTROL FILES), over a control::ControlPlane.
//
// Serves every request on a virtual node (NodeKind::kVirtual): lookups,
// attributes, listings' entries, opens, reads and writes of control files
// (a write is taken at FLUSH, or at once for a per-write file), mkdir and
// rmdir of job directories; and the empty directories `.epochfs` and `.spill`
// that a dataset session without OPEN shows as the other sessions'
// mountpoints. Owns the per-user budget of control files open for writing;
// the inode and handle tables belong to the Filesystem (FsContext).
//
// Thread safety: ops run concurrently; the control plane, the tables and the
// budget are thread-safe, and an open control file's buffer is guarded by
// its OpenFile::mu.
#pragma once

#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <ctime>
#include <string>

#include "epochfs/control/control_plane.h"
#include "fs_common.h"
#include "user_budget.h"

namespace epochfs::fs {

class ControlView {
 public:
  // REQUIRES: `ctx` and `control` outlive the ControlView.
  ControlView(const FsContext& ctx, control::ControlPlane& control);

  // Attributes of virtual node `v` (inode `ino`).
  struct stat VirtualAttr(fuse_ino_t ino, const control::VNode& v) const;
  // `.epochfs` (and, when split, `.spill`) at the root of the dataset.
  control::VNode MountDirNode() const;
  // The mount root's entry `path` ("" for `.epochfs`, or `.spill` as the
  // spill session's mountpoint) as a directory of this session; takes one
  // lookup.
  NodeView MountDir(const std::string& path);

  // Resolves `name` in virtual directory `parent` and takes one lookup on
  // the child.
  Result<NodeView> LookupChild(fuse_req_t req, const NodeView& parent, const char* name);
  void GetAttr(fuse_req_t req, fuse_ino_t ino, const NodeView& v);
  // The entries of virtual directory `v` (not detached) into `dir`: 0, or
  // the errno to reply.
  int FillListing(fuse_req_t req, const NodeView& v, OpenDir& dir);
  void Open(fuse_req_t req, const NodeView& v, fuse_file_info* fi, int acc);
  // A READ of a control file (kVirtualRead, kVirtualWrite).
  void Read(fuse_req_t req, OpenFile& f, size_t size, off_t off);
  // A WRITE of a control file open for writing (kVirtualWrite).
  void Write(fuse_req_t req, OpenFile& f, const char* buf, size_t size, off_t off);
  void Flush(fuse_req_t req, OpenFile& f);
  // The release of a control file open for writing: its budget share.
  void Release(OpenFile& f);
  void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name);
  void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name);

  // The control directory at `control_path` went away without an rmdir
  // through the mount (Filesystem::ControlEntryRemoved): drops the kernel's
  // entry in session `se`. Never from a request handler.
  void EntryRemoved(fuse_session* se, const std::string& control_path);

 private:
  // mkdir/rmdir: only inside the control tree. Returns 0 and the parent, or
  // the errno to reply.
  int VirtualParent(fuse_ino_t parent, const char* name, NodeView* dir);

  const FsContext& ctx_;
  control::ControlPlane& control_;
  const time_t start_time_;
  UserBudget budget_;  // control files open for writing, per user
};

}  // namespace epochfs::fs
