#include "inode_table.h"

#include <mutex>

namespace epochfs::fs {

InodeTable::InodeTable(const struct stat& root_st) {
  Node root;
  root.view = {FUSE_ROOT_ID, NodeKind::kLower, "", root_st};
  root.nlookup = 1;
  nodes_.emplace(FUSE_ROOT_ID, root);
  by_key_.emplace(Key(NodeKind::kLower, ""), FUSE_ROOT_ID);
}

NodeView InodeTable::Ref(NodeKind kind, const std::string& path, const struct stat& st) {
  std::unique_lock lock(mu_);
  std::string key = Key(kind, path);
  auto it = by_key_.find(key);
  if (it != by_key_.end()) {
    Node& n = nodes_.at(it->second);
    ++n.nlookup;
    // A lower path that now names a different file (replaced under us) keeps
    // its inode number but takes the new attributes.
    n.view.st = st;
    return n.view;
  }
  fuse_ino_t ino = next_ino_++;
  Node n;
  n.view = {ino, kind, path, st};
  n.nlookup = 1;
  nodes_.emplace(ino, n);
  by_key_.emplace(std::move(key), ino);
  return n.view;
}

std::optional<NodeView> InodeTable::Get(fuse_ino_t ino) const {
  std::shared_lock lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return std::nullopt;
  return it->second.view;
}

fuse_ino_t InodeTable::Peek(NodeKind kind, const std::string& path) const {
  std::shared_lock lock(mu_);
  auto it = by_key_.find(Key(kind, path));
  return it == by_key_.end() ? 0 : it->second;
}

void InodeTable::SetAttr(fuse_ino_t ino, const struct stat& st) {
  std::unique_lock lock(mu_);
  auto it = nodes_.find(ino);
  if (it != nodes_.end()) it->second.view.st = st;
}

bool InodeTable::MarkServed(fuse_ino_t ino, const store::Version& v) {
  std::unique_lock lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return false;
  bool same = it->second.served == v;
  it->second.served = v;
  return same;
}

void InodeTable::Forget(fuse_ino_t ino, uint64_t n) {
  if (ino == FUSE_ROOT_ID) return;
  std::unique_lock lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  if (it->second.nlookup > n) {
    it->second.nlookup -= n;
    return;
  }
  by_key_.erase(Key(it->second.view.kind, it->second.view.path));
  nodes_.erase(it);
}

}  // namespace epochfs::fs
