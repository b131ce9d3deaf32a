// OpenFile / OpenDir: what the fs layer's handles (fi->fh) point at.
// Internal to src/fs; shared by the dataset, control and spill ops.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <future>
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
  enum class Kind { kObject, kBlocks, kStream, kVirtualRead, kVirtualWrite, kSpill } kind;
  // kObject: the file (a handed-over stub until a READ refills it, guarded
  // by mu); kBlocks: the block last read (guarded by mu).
  store::ObjectRef object;
  uint64_t block_index = 0; // kBlocks: object's index (guarded by mu)
  // kBlocks: the load of block `ahead_index`, started when a sequential
  // reader took the block before it (guarded by mu; see block_reader.h).
  std::shared_future<Result<store::ObjectRef>> ahead;
  uint64_t ahead_index = 0;
  uint64_t block_size = 0;  // kBlocks
  store::Version version;   // kBlocks: the version opened (every block is of it)
  // kBlocks: the file as a whole object, and the job (and its sample) the
  // open was attributed to; every block's access carries them. kObject: the
  // job and sample a refill of a handed-over object is asked for.
  cache::ObjectId file_id = 0;
  cache::JobId job = cache::kNoJob;
  int64_t sample = -1;
  UniqueFd fd;              // kStream
  std::string path;         // kVirtual*: control path; kBlocks, kObject: lower path
  std::string content;      // kVirtualRead: snapshot; kVirtualWrite: buffer
  std::mutex mu;            // kVirtualWrite: guards content; kObject: object; kBlocks: object, block_index
  bool dirty = false;       // kVirtualWrite: written since the last flush
  bool append = false;      // kVirtualWrite, kSpill: opened O_APPEND
  bool per_write = false;   // kVirtualWrite: each write is one control write (VNode)
  // kObject, fuse.no_open: a pass that refilled an object the kernel had
  // been handed, begun by a READ past offset 0 (the kernel lost some pages,
  // not the file), of at most kMaxPatchBytes (kernel_handover.h): the object
  // goes back to the kernel after that READ.
  bool patch = false;
  // kObject, a handed-over stub of a file in several blocks: the two blocks
  // last read back from LOWER for pages the kernel lost (refill_reader.h;
  // the newer first). Guarded by refill_mu, which a refill holds while it
  // reads LOWER: the kernel's concurrent READs of one block read it once.
  std::mutex refill_mu;
  struct Refilled {
    store::ObjectRef block;
    uint64_t index = 0;
  };
  Refilled refill[2];
  // kObject, opened on a handed-over stub (the open counted a hit): whether
  // a READ of this open has asked for the bytes again, whole
  // (KernelHandover::ObjectFor) or in blocks. The first one makes the open's
  // hit a refill (GetRequest::first_refill; CacheFront::RefillBlock's
  // `first`): once per open.
  std::atomic<bool> refilled{false};
  uid_t writer = 0;         // kVirtualWrite, kSpill, kStream, kBlocks: who opened it (UserBudget)
  std::shared_ptr<spill::SpillFile> spill;  // kSpill
};

// What an open directory handle points at: a snapshot of the listing, so that
// offsets stay valid while the directory changes underneath.
//
// Compact: a lower entry is its name, type and kind (48 bytes); its path is
// the directory's plus the name, made when needed, and its attributes live in
// `attrs` only once a readdirplus has taken its lstat (a plain readdir, which
// `find` and os.scandir use, never makes them). Virtual and spill entries are
// few and carry both from the start.
struct OpenDir {
  enum class Attr : uint8_t {
    kNone,  // lower, not statted yet
    kHave,  // attrs[attr_index] holds them
    kGone,  // lower: not there when its lstat was taken
  };
  struct Entry {
    std::string name;
    mode_t type = 0;  // S_IF* bits; 0: unknown
    NodeKind kind = NodeKind::kLower;
    Attr attr = Attr::kNone;
    uint32_t attr_index = 0;
  };
  struct Attrs {
    struct stat st;    // lower: its lstat; virtual, spill: synthesised
    std::string path;  // virtual, spill: the child's path; lower: empty (see PathOf)
  };

  // Adds a lower entry with no attributes.
  void AddLower(std::string name, mode_t type) {
    entries.push_back({std::move(name), type, NodeKind::kLower, Attr::kNone, 0});
  }
  // Adds an entry whose attributes and path are known.
  void AddWithAttrs(std::string name, const struct stat& st, NodeKind kind, std::string path) {
    entries.push_back({std::move(name), st.st_mode & S_IFMT, kind, Attr::kHave,
                       static_cast<uint32_t>(attrs.size())});
    attrs.push_back({st, std::move(path)});
  }
  // Records a lower entry's lstat (nullptr: gone).
  void SetLowerStat(Entry& e, const struct stat* st) {
    if (!st) {
      e.attr = Attr::kGone;
      return;
    }
    e.attr = Attr::kHave;
    e.attr_index = static_cast<uint32_t>(attrs.size());
    attrs.push_back({*st, {}});
  }
  // The entry's path (lower: `lower_path`/name, built in `scratch`).
  const std::string& PathOf(const Entry& e, std::string& scratch) const {
    if (e.kind != NodeKind::kLower) return attrs[e.attr_index].path;
    if (lower_path.empty()) return e.name;
    scratch.assign(lower_path).append("/").append(e.name);
    return scratch;
  }

  std::string lower_path;  // the directory's lower path ("" for the root)
  std::mutex mu;  // a readdirplus fills in lower entries' attributes as it reaches them
  std::vector<Entry> entries;  // guarded by mu
  std::vector<Attrs> attrs;    // guarded by mu
};

}  // namespace epochfs::fs
