// InodeTable: FUSE inode numbers ↔ lower paths and virtual control paths.
//
// Inode 1 is the mount root (lower ""). Lower nodes are keyed by their lower
// path, virtual nodes (the `.epochfs/` tree) by their control path; both get
// numbers from one counter that never repeats within a mount. A node lives
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

enum class NodeKind : uint8_t { kLower, kVirtual };

// A copy of a node's state, safe to use after the table lock is released.
struct NodeView {
  fuse_ino_t ino = 0;
  NodeKind kind = NodeKind::kLower;
  std::string path;  // lower path, or control path for virtual nodes
  struct stat st {};  // lower nodes: lstat of the lower file (its own st_dev/st_ino)
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
  // Drops `n` lookups; the node is removed when none remain.
  void Forget(fuse_ino_t ino, uint64_t n);

 private:
  struct Node {
    NodeView view;
    uint64_t nlookup = 0;
    std::optional<store::Version> served;
  };
  static std::string Key(NodeKind kind, const std::string& path) {
    return (kind == NodeKind::kVirtual ? "v:" : "l:") + path;
  }

  mutable std::shared_mutex mu_;
  fuse_ino_t next_ino_ = FUSE_ROOT_ID + 1;             // guarded by mu_
  std::unordered_map<fuse_ino_t, Node> nodes_;         // guarded by mu_
  std::unordered_map<std::string, fuse_ino_t> by_key_;  // guarded by mu_
};

}  // namespace epochfs::fs
