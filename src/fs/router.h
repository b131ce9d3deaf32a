// Router: the Filesystem of one FUSE session. It owns the session's tables
// (inodes, open files, open directories), its views and the op table; each
// op finds the node or handle it is about and hands the request to the view
// that serves it: the dataset's files (data_view.h; what the kernel keeps of
// them, kernel_handover.h), directory listings (listing.h), the control tree
// (control_view.h) or the spill area (spill_fs.h). Every modifying op outside
// the control tree and the spill area replies EROFS (modify_routes.cc).
//
// Internal to src/fs: included by filesystem.cc (lifecycle, op table, the
// reading ops) and modify_routes.cc (the modifying ops), never by a view.
// Every op runs under the callback guard (callback_guard.h) and answers
// through reply.h.
// Thread safety: ops run concurrently on the session's worker threads; the
// tables and views are thread-safe. SetSpillStore and SetReadahead run
// before the session serves requests.
#pragma once

#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "control_view.h"
#include "data_view.h"
#include "descriptor_pool.h"
#include "epochfs/fs/filesystem.h"
#include "fs_common.h"
#include "handle_table.h"
#include "inode_table.h"
#include "kernel_handover.h"
#include "listing.h"
#include "open_file.h"
#include "spill_fs.h"
#include "user_budget.h"

namespace epochfs::fs {

class Router final : public Filesystem {
 public:
  Router(const FsParts& p, const struct stat& root_st);

  const fuse_lowlevel_ops& ops() const override { return ops_; }
  void Attach(fuse_session* se) override;
  void Detach() override;
  void ControlEntryRemoved(const std::string& control_path) override;
  void SetSpillStore(spill::SpillStore* store) override;
  void SetReadahead(const std::string& ra_file, unsigned kib) override;

 private:
  static Router& Self(fuse_req_t req) { return *static_cast<Router*>(fuse_req_userdata(req)); }
  // This session serves dataset files (and keeps the kernel's pages of them
  // in step with the RAM tier).
  bool ServesDataset() const { return role_ == Role::kWhole || role_ == Role::kDataset; }
  Result<NodeView> LookupChild(fuse_req_t req, const NodeView& parent, const char* name);
  void RaiseReadaheadOnce();
  // The spill node `parent`, when it is one.
  std::optional<NodeView> SpillParent(fuse_ino_t parent);
  int ReadOnlyOrUnsupported(fuse_ino_t ino);
  void FillOps();

  // Reading ops (filesystem.cc).
  static void Init(void* userdata, fuse_conn_info* conn);
  static void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name);
  static void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
  static void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets);
  static void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  static void ReadLink(fuse_req_t req, fuse_ino_t ino);
  static void OpenDirOp(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  static void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
  static void ReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                          fuse_file_info* fi);
  static void ReleaseDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  static void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  static void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
  static void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  static void StatFs(fuse_req_t req, fuse_ino_t ino);

  // Modifying ops (modify_routes.cc).
  static void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
                      fuse_file_info* fi);
  static void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
                    fuse_file_info* fi);
  static void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  static void Fsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);
  static void FsyncDir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);
  static void MkDir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode);
  static void RmDir(fuse_req_t req, fuse_ino_t parent, const char* name);
  static void MkNod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev);
  static void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name);
  static void SymLink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name);
  static void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
                     const char* newname, unsigned int flags);
  static void Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname);
  static void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
                     fuse_file_info* fi);
  static void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value,
                       size_t size, int flags);
  static void RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char* name);
  static void Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                        fuse_file_info* fi);

  const Role role_;
  InodeTable inodes_;
  HandleTable<OpenFile> files_;
  HandleTable<OpenDir> dirs_;
  std::unique_ptr<store::KnownLower> own_known_;  // when FsParts gave none
  const FsContext ctx_;
  const bool spill_enabled_;     // this session serves the spill area
  const bool spill_mountpoint_;  // Role::kDataset: `.spill` is the kSpill session's mountpoint
  const unsigned max_read_;
  DescriptorPool descriptors_;  // held by users' open spill and streamed files, all users
  UserBudget spill_budget_;     // spill files open, per user
  KernelHandover handover_;
  ControlView control_;
  DataView data_;
  std::unique_ptr<SpillFs> spill_;  // null without a spill area (set before serving)
  Listing listing_;
  std::atomic<fuse_session*> session_{nullptr};  // set between Attach and Detach
  std::string ra_file_;
  unsigned ra_kib_ = 0;
  std::once_flag ra_once_;
  fuse_lowlevel_ops ops_;
};

}  // namespace epochfs::fs
