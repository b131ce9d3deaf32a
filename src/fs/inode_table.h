// InodeTable: FUSE inode numbers ↔ lower paths, virtual control paths and
// spill paths.
//
// Inode 1 is the session's root: lower "" (the mount), or virtual "" (the
// control directory, when it is a session of its own: fuse.no_open). Lower nodes are keyed by their lower
// path, virtual nodes (the `.epochfs/` tree) by their control path, spill
// nodes (the writable `.spill/` area) by their path under it. Spill paths
// change: Rename re-keys a node and its descendants, Detach unhooks a removed
// one (its inode stays valid for open handles but no longer names a path). A
// node lives while the kernel holds lookups on it (nlookup > 0); the root
// never dies. The number of a node the kernel forgot is given to a later node
// with the next generation (the pair never repeats within a mount).
//
// With `renumber_changed` (consistency "open"), a lower regular file whose
// version (store/version.h: `versions`, LOWER's rule) changed since its node was made
// gets a new node at its next Ref, and the old one is detached: the kernel,
// told a new inode number by the LOOKUP that revalidates the name, opens the
// new inode, so no open after the change can read pages of the version before
// or be cut at its size (the old inode keeps both for the files already open
// on it). A node is one version for good: its size and mtime are what SetAttr
// shows the kernel, whatever LOWER holds now. Without it the node keeps its
// number and takes the new attributes. A file LOWER only numbered anew (a
// FUSE LOWER without stable inode numbers) is the same version: same node.
//
// Under consistency "open" the LOOKUP that starts every open by name stats
// the lower file: that stat is the open's check of LOWER, and the OPEN that
// follows uses it rather than stat the file again. A node remembers that a
// lookup checked it (MarkChecked) until an open takes the check
// (TakeChecked): one stat of LOWER per open, whether it came with the
// open's lookup or, for an open that had none (through /proc/self/fd, or
// a second open racing the first for one lookup), is made by the open.
//
// Memory: a mount of a million-file dataset knows a million inodes, so a node
// keeps only what the data path needs: its path, lookups, and of a lower
// file the fields an open checks (mode and version: size, mtime, ctime,
// inode number); about 100 bytes plus the path and ~40 bytes of index
// (docs/benchmarks.md, "Scale").
// Thread safety: thread-safe (one shared_mutex; readers share it).
#pragma once

#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "epochfs/store/object.h"

namespace epochfs::fs {

enum class NodeKind : uint8_t { kLower, kVirtual, kSpill };

// A copy of a node's state, safe to use after the table lock is released.
struct NodeView {
  fuse_ino_t ino = 0;
  uint64_t generation = 1;
  NodeKind kind = NodeKind::kLower;
  std::string path;  // lower path, control path (virtual) or spill path
  // Lower nodes: from Ref, the lstat it was given; from Get, only st_mode
  // and what the version holds of the last one: st_size, st_mtim, st_ctim
  // and st_ino (the lower file's, or 0: store/version.h), what an open needs
  // (attributes for the kernel come from a fresh lstat).
  // Virtual and spill nodes: empty (their callers make their attributes).
  struct stat st {};
  bool detached = false;  // spill: removed; `path` no longer names it
  // Lower nodes from a lookup: seconds since LOWER gave `st` (KnownLower),
  // taken off the time the kernel may keep them.
  double attr_age = 0;
};

class InodeTable {
 public:
  // The root is lower "" with attributes `root_st`, or virtual "" when
  // `root_kind` is kVirtual.
  // `versions`: how LOWER's files' versions are read (Lower::versions()).
  explicit InodeTable(const struct stat& root_st, NodeKind root_kind = NodeKind::kLower,
                      bool renumber_changed = false,
                      store::VersionRule versions = store::VersionRule());

  // Finds or creates the node for (kind, path) and adds one lookup (a new
  // node for a changed lower file with `renumber_changed`, above).
  NodeView Ref(NodeKind kind, const std::string& path, const struct stat& st);
  std::optional<NodeView> Get(fuse_ino_t ino) const;
  // The generation of live node `ino` (Get's, without copying the node); 0
  // when there is none.
  uint64_t Generation(fuse_ino_t ino) const;
  // The inode number of (kind, path) without taking a lookup; 0 if none.
  fuse_ino_t Peek(NodeKind kind, const std::string& path) const;
  // Replaces a lower node's cached attributes with `st`, a fresh lstat of its
  // path. With `renumber_changed`, a regular file's node keeps its version:
  // when `st` is another version's, the node is left alone and `st` is made
  // to show the node's size, mtime and ctime (the attributes of the inode the kernel
  // asked about; its pages are of that version).
  void SetAttr(fuse_ino_t ino, struct stat& st);
  // Records that `ino` was opened with bytes of version `v`; returns true when
  // the previous open served the same version (the kernel's cached pages of
  // the inode, if any, are then still right).
  bool MarkServed(fuse_ino_t ino, const store::Version& v);
  // True when the last open of `ino` served version `v` (MarkServed).
  bool Served(fuse_ino_t ino, const store::Version& v) const;
  // A lookup has just stat'ed the lower path of `ino` (its node has that
  // stat's version): the next open of it may take that check (above).
  void MarkChecked(fuse_ino_t ino);
  // True, once, when a lookup checked `ino` since the last open took a
  // check; false for a node no longer under its path (Detach, renumbered).
  bool TakeChecked(fuse_ino_t ino);
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
    std::string path;
    uint64_t nlookup = 0;  // 0: a free slot
    store::Version version;  // lower: the version of its lstat (VersionRule), and st_mode
    uint64_t served = 0;  // a hash of the version last served (MarkServed), 0: none
    uint32_t mode = 0;
    uint32_t generation = 1;
    NodeKind kind = NodeKind::kLower;
    bool detached = false;
    bool checked = false;  // MarkChecked, not yet taken by an open
  };
  // The index: node numbers, hashed and compared by their (kind, path);
  // probed with a Key (C++20 heterogeneous lookup), so no path is stored twice.
  struct Key {
    NodeKind kind;
    std::string_view path;
  };
  struct KeyHash {
    using is_transparent = void;
    const InodeTable* table;
    size_t operator()(const Key& k) const;
    size_t operator()(fuse_ino_t ino) const;
  };
  struct KeyEq {
    using is_transparent = void;
    const InodeTable* table;
    Key Of(fuse_ino_t ino) const;
    bool operator()(fuse_ino_t a, fuse_ino_t b) const { return a == b; }
    bool operator()(const Key& a, fuse_ino_t b) const;
    bool operator()(fuse_ino_t a, const Key& b) const { return (*this)(b, a); }
  };
  Node& At(fuse_ino_t ino) { return nodes_[ino - FUSE_ROOT_ID]; }
  const Node& At(fuse_ino_t ino) const { return nodes_[ino - FUSE_ROOT_ID]; }
  bool Live(fuse_ino_t ino) const {
    return ino >= FUSE_ROOT_ID && ino - FUSE_ROOT_ID < nodes_.size() && At(ino).nlookup != 0;
  }
  NodeView ViewOf(fuse_ino_t ino) const;
  void SetLowerAttr(Node& n, const struct stat& st) const;
  bool Changed(const Node& n, const struct stat& st) const;  // another version of a lower file
  void Unindex(fuse_ino_t ino);  // REQUIRES: mu_ held exclusively, node indexed

  const bool renumber_changed_;
  const store::VersionRule versions_;
  mutable std::shared_mutex mu_;
  std::vector<Node> nodes_;                 // guarded by mu_; node ino at [ino - 1]
  std::vector<fuse_ino_t> free_;            // guarded by mu_; forgotten numbers
  std::unordered_set<fuse_ino_t, KeyHash, KeyEq> by_key_;  // guarded by mu_; live, not detached
};

}  // namespace epochfs::fs
