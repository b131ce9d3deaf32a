// DataView: the FUSE ops of the dataset's files (NodeKind::kLower): their
// attributes, symlinks, opens and reads, over LOWER and the cache front.
//
// An open (or, without OPEN, the pass a READ starts: pass_table.h) reads its
// file one of three ways: a whole object from the cache front (files up to
// cache.max_object_bytes), blocks of it (block_reader.h, cache.block_size),
// or a stream of LOWER. Every read-open is attributed to the caller's job
// (Attributor). What the kernel keeps of what it is sent is the
// KernelHandover's business; this view tells it what was opened and sent.
//
// Owns the passes of a session without OPEN and the per-user budget of files
// open in blocks or streamed (a lower descriptor each); the inode and handle
// tables are the Filesystem's (FsContext).
// Thread safety: ops run concurrently; the tables, the budget, the cache
// front and LOWER are thread-safe, and an open file's object and block are
// guarded by its OpenFile::mu.
#pragma once

#include <fuse_lowlevel.h>

#include <memory>
#include <string>
#include <utility>

#include "descriptor_pool.h"
#include "fs_common.h"
#include "kernel_handover.h"
#include "pass_table.h"
#include "root_attr.h"
#include "user_budget.h"

namespace epochfs::fs {

class DataView {
 public:
  // REQUIRES: every reference outlives the DataView.
  DataView(const FsContext& ctx, Attributor& attributor, KernelHandover& handover,
           DescriptorPool& descriptors);

  // Resolves `name` in lower directory `parent` and takes one lookup on the child.
  Result<NodeView> LookupChild(const NodeView& parent, const char* name);
  void GetAttr(fuse_req_t req, fuse_ino_t ino, const NodeView& v,
               const store::AnswerScope& answerable);
  void ReadLink(fuse_req_t req, const NodeView& v);
  // OPEN of dataset node `v` (a mount with OPEN).
  void Open(fuse_req_t req, fuse_ino_t ino, const NodeView& v, fuse_file_info* fi);
  // READ of open dataset file `f` (kObject, kBlocks, kStream).
  void Read(fuse_req_t req, fuse_ino_t ino, const std::shared_ptr<OpenFile>& f, size_t size,
            off_t off);
  // READ of open file `f` whose object is handed-over `stub`, refilled in
  // blocks (refill_reader.h; a mount with OPEN).
  void ReadRefill(fuse_req_t req, fuse_ino_t ino, OpenFile& f, const store::ObjectRef& stub,
                  size_t size, off_t off);
  // READ without OPEN (Role::kDataset): by inode, through a pass.
  void ReadWithoutOpen(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off);
  // The release of open dataset file `f` of `ino`.
  void Release(fuse_ino_t ino, OpenFile& f);
  // The RAM tier dropped the object inode `ino` was sent: a pass holding it
  // lets it go (without OPEN).
  void ForgetPass(fuse_ino_t ino) { passes_.ForgetObject(ino); }

 private:
  // What an open of a dataset file reads: its whole object, its blocks or a
  // stream of LOWER; or the errno the open fails with.
  struct LowerOpen {
    std::shared_ptr<OpenFile> file;
    int err = 0;
    bool keep_cache = false;  // the kernel's pages of the inode may be kept
  };
  LowerOpen OpenLower(fuse_req_t req, fuse_ino_t ino, const NodeView& v);
  LowerOpen OpenBlocks(fuse_ino_t ino, const std::string& rel, const struct stat& st, uid_t uid,
                       cache::ObjectId id, const Attributor::Attribution& who);
  std::pair<std::shared_ptr<OpenFile>, int> PassFor(fuse_req_t req, fuse_ino_t ino, off_t off);

  const FsContext& ctx_;
  Attributor& attributor_;
  KernelHandover& handover_;
  UserBudget lower_budget_;  // files open in blocks or streamed, per user
  // Role::kDataset. A pass pushed out drops the pages of what it held.
  PassTable passes_;
  // The root's attributes, answered from the last known ones while LOWER hangs.
  RootAttr root_;
};

}  // namespace epochfs::fs
