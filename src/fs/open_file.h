// OpenFile / OpenDir: what the fs layer's handles (fi->fh) point at.
// Internal to src/fs; shared by the dataset, control and spill ops.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "epochfs/common/unique_fd.h"
#include "epochfs/spill/spill_store.h"
#include "epochfs/store/cache_front.h"
#include "inode_table.h"

namespace epochfs::fs {

// What an open file handle (fi->fh) points at.
struct OpenFile {
  enum class Kind { kObject, kStream, kVirtualRead, kVirtualWrite, kSpill } kind;
  store::ObjectRef object;  // kObject
  UniqueFd fd;              // kStream
  std::string path;         // kVirtual*: control path
  std::string content;      // kVirtualRead: snapshot; kVirtualWrite: buffer
  std::mutex mu;            // kVirtualWrite: guards content
  bool dirty = false;       // kVirtualWrite: written since the last flush
  bool append = false;      // kVirtualWrite, kSpill: opened O_APPEND
  uid_t writer = 0;         // kVirtualWrite, kSpill, kStream: who opened it (UserBudget)
  std::shared_ptr<spill::SpillFile> spill;  // kSpill
};

// What an open directory handle points at: a snapshot of the listing, so that
// offsets stay valid while the directory changes underneath.
struct OpenDir {
  struct Entry {
    std::string name;
    struct stat st;   // lower: lstat once `have_st` (else only the type bits of st_mode, or 0);
                      // virtual, spill: synthesised
    NodeKind kind;
    std::string path;  // child's lower or control path
    bool have_st = true;
    bool gone = false;  // lower: not there when its lstat was taken
  };
  std::mutex mu;  // a readdirplus fills in lower entries' st as it reaches them
  std::vector<Entry> entries;  // guarded by mu
};

}  // namespace epochfs::fs
