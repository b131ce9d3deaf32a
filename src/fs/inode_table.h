// InodeTable: FUSE inode numbers ↔ lower paths, virtual control paths and
// spill paths.
//
// Inode 1 is the mount root (lower ""). Lower nodes are keyed by their lower
// path, virtual nodes (the `.epochfs/` tree) by their control path, spill
// nodes (the writable `.spill/` area) by their path under it; all get
// numbers from one counter that never repeats within a mount. Spill paths
// change: Rename re-keys a node and its descendants, Detach unhooks a removed
// one (its inode stays valid for open handles but no longer names a path). A node lives
// while the kernel holds lookups on it (nlookup > 0); the root never dies.
// Thread safety: thread-safe (one shared_mutex; readers share it).
#pragma once

#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "epochfs/store/object.h"

namespace epochfs::fs {

enum class NodeKind : uint8_t { kLower, kVirtual, kSpill };

// A copy of a node's state, safe to use after the table lock is released.
struct NodeView {
  fuse_ino_t ino = 0;
  NodeKind kind = NodeKind::kLower;
  std::string path;  // lower path, control path (virtual) or spill path
  struct stat st {};  // lower nodes: lstat of the lower file (its own st_dev/st_ino)
  bool detached = false;  // spill: removed; `path` no longer names it
};

class InodeTable {
 public:
  explicit InodeTable(const struct stat& root_st);

  // Finds or creates the node for (kind, path) and adds one lookup.
  NodeView Ref(NodeKind kind, const std::string& path, const struct stat& st);
  std::optional<NodeView> Get(fuse_ino_t ino) const;
  // The inode number of (kind, path) without taking a lookup; 0 if none.
  fuse_ino_t Peek(NodeKind kind, const std::string& path) const;
  // Replaces a lower node's cached attributes.
  void SetAttr(fuse_ino_t ino, const struct stat& st);
  // Records that `ino` was opened with bytes of version `v`; returns true when
  // the previous open served the same version (the kernel's cached pages of
  // the inode, if any, are then still right).
  bool MarkServed(fuse_ino_t ino, const store::Version& v);
  // Spill nodes: `from` (and everything below it) is now `to`; a node that
  // was at `to` (replaced) is detached.
  void Rename(NodeKind kind, const std::string& from, const std::string& to);
  // The node at (kind, path), if any, no longer names that path.
  void Detach(NodeKind kind, const std::string& path);
  // The same for `path` and every node below it (a removed job directory: a
  // new one of the same name gets new inode numbers, so that the kernel never
  // takes it for the dead directory a process may still hold). O(nodes).
  void DetachTree(NodeKind kind, const std::string& path);
  // Drops `n` lookups; the node is removed when none remain.
  void Forget(fuse_ino_t ino, uint64_t n);

 private:
  struct Node {
    NodeView view;
    uint64_t nlookup = 0;
    std::optional<store::Version> served;
  };
  static std::string Key(NodeKind kind, const std::string& path) {
    return (kind == NodeKind::kVirtual ? "v:" : kind == NodeKind::kSpill ? "s:" : "l:") + path;
  }

  mutable std::shared_mutex mu_;
  fuse_ino_t next_ino_ = FUSE_ROOT_ID + 1;             // guarded by mu_
  std::unordered_map<fuse_ino_t, Node> nodes_;         // guarded by mu_
  std::unordered_map<std::string, fuse_ino_t> by_key_;  // guarded by mu_
};

}  // namespace epochfs::fs
