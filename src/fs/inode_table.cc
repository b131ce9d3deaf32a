#include "inode_table.h"

#include <mutex>
#include <utility>
#include <vector>

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

void InodeTable::Detach(NodeKind kind, const std::string& path) {
  std::unique_lock lock(mu_);
  auto it = by_key_.find(Key(kind, path));
  if (it == by_key_.end()) return;
  nodes_.at(it->second).view.detached = true;
  by_key_.erase(it);
}

void InodeTable::DetachTree(NodeKind kind, const std::string& path) {
  std::unique_lock lock(mu_);
  const std::string self = Key(kind, path);
  const std::string below = self + "/";
  for (auto it = by_key_.begin(); it != by_key_.end();) {
    if (it->first == self || it->first.compare(0, below.size(), below) == 0) {
      nodes_.at(it->second).view.detached = true;
      it = by_key_.erase(it);
    } else {
      ++it;
    }
  }
}

void InodeTable::Rename(NodeKind kind, const std::string& from, const std::string& to) {
  std::unique_lock lock(mu_);
  if (auto old = by_key_.find(Key(kind, to)); old != by_key_.end()) {
    nodes_.at(old->second).view.detached = true;
    by_key_.erase(old);
  }
  // Collect first: re-keying while iterating by_key_ would invalidate it.
  const std::string self = Key(kind, from);
  const std::string below = self + "/";
  std::vector<std::pair<std::string, fuse_ino_t>> moved;
  for (const auto& [key, ino] : by_key_) {
    if (key == self || key.compare(0, below.size(), below) == 0) moved.emplace_back(key, ino);
  }
  for (const auto& [key, ino] : moved) {
    by_key_.erase(key);
    Node& n = nodes_.at(ino);
    n.view.path = to + n.view.path.substr(from.size());
    by_key_[Key(kind, n.view.path)] = ino;
  }
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
  if (!it->second.view.detached) by_key_.erase(Key(it->second.view.kind, it->second.view.path));
  nodes_.erase(it);
}

}  // namespace epochfs::fs
