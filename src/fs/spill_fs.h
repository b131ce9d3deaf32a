// SpillFs: the FUSE ops of the writable spill area MOUNTPOINT/.spill/
// (epochfs(8) SPILL AREA), over a spill::SpillStore.
//
// The Filesystem routes every request on a spill node (NodeKind::kSpill; the
// area's root is path "") here. Files and directories live in the store;
// this class maps inodes and handles to store paths and files, checks who
// may touch what, and turns Status into errno.
//
// Privacy: each entry belongs to the user who created it and is reachable
// only by that user and root. Modes are kept to the owner's bits (group and
// other bits are dropped at create, mkdir and chmod, so that the kernel's
// default_permissions check refuses other users too), every op checks the
// owner again, and a listing of the area's root shows a user only their own
// entries. The root itself is 1777, owned by root. Names at the root are per
// user: a user's NAME there is the store path NAME@UID (common/user_key.h),
// so no create, lookup or rename tells whether another user has a NAME; root
// sees and reaches the keys.
//
// Files are opened with direct_io: every read and write reaches the store,
// whose RAM staging is the only cached copy (mmap of spill files is not
// supported). Attributes are never cached by the kernel (timeout 0).
//
// Thread safety: ops run concurrently; the store and tables are thread-safe.
#pragma once

#include <fuse_lowlevel.h>

#include "epochfs/fs/fs_types.h"
#include "epochfs/spill/spill_store.h"
#include "handle_table.h"
#include "inode_table.h"
#include "open_file.h"
#include "reply.h"
#include "user_budget.h"

namespace epochfs::fs {

class SpillFs {
 public:
  // REQUIRES: every reference outlives the SpillFs.
  // `budget`: spill files open per user (EMFILE past it); the Filesystem
  // closes a handle's share at release.
  SpillFs(spill::SpillStore& store, InodeTable& inodes, HandleTable<OpenFile>& files,
          HandleTable<OpenDir>& dirs, UserBudget& budget)
      : store_(store), inodes_(inodes), files_(files), dirs_(dirs), budget_(budget) {}

  // The area's root node, looked up from the mount root (takes one lookup).
  void LookupRoot(fuse_req_t req);
  // Attributes of the area's root for a listing of the mount root.
  struct stat RootAttr() const;

  void Lookup(fuse_req_t req, const NodeView& parent, const char* name);
  void GetAttr(fuse_req_t req, const NodeView& v, fuse_file_info* fi);
  void SetAttr(fuse_req_t req, const NodeView& v, struct stat* attr, int to_set,
               fuse_file_info* fi);
  void OpenDirectory(fuse_req_t req, const NodeView& v, fuse_file_info* fi);
  void Open(fuse_req_t req, const NodeView& v, fuse_file_info* fi);
  void Create(fuse_req_t req, const NodeView& parent, const char* name, mode_t mode,
              fuse_file_info* fi);
  void Read(fuse_req_t req, OpenFile& f, size_t size, off_t off);
  void Write(fuse_req_t req, OpenFile& f, const char* buf, size_t size, off_t off);
  void Fsync(fuse_req_t req, OpenFile& f);
  void Mkdir(fuse_req_t req, const NodeView& parent, const char* name, mode_t mode);
  void Rmdir(fuse_req_t req, const NodeView& parent, const char* name);
  void Unlink(fuse_req_t req, const NodeView& parent, const char* name);
  void Rename(fuse_req_t req, const NodeView& parent, const char* name,
              const NodeView& newparent, const char* newname, unsigned int flags);

 private:
  // errno 0 when the caller may act on `attr` (its owner, or root).
  static int MayTouch(fuse_req_t req, const spill::SpillAttr& attr);
  // errno 0 when the caller may create or remove entries in `dir`.
  int MayChangeDir(fuse_req_t req, const NodeView& dir);
  struct stat ToStat(fuse_ino_t ino, const spill::SpillAttr& a) const;
  void ReplyEntry(fuse_req_t req, const std::string& path, const spill::SpillAttr& a);

  spill::SpillStore& store_;
  InodeTable& inodes_;
  HandleTable<OpenFile>& files_;
  HandleTable<OpenDir>& dirs_;
  UserBudget& budget_;
};

}  // namespace epochfs::fs
