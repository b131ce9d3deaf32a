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
    struct stat st;   // lower: lstat; virtual: synthesised
    NodeKind kind;
    std::string path;  // child's lower or control path
  };
  std::vector<Entry> entries;
};

}  // namespace epochfs::fs
