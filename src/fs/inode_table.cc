#include "inode_table.h"

#include <mutex>
#include <utility>
#include <vector>

#include "epochfs/common/hash.h"
#include "epochfs/store/object.h"

namespace epochfs::fs {
namespace {

uint64_t VersionHash(const store::Version& v) {
  const uint64_t key[4] = {v.size, static_cast<uint64_t>(v.mtime_ns),
                           static_cast<uint64_t>(v.ctime_ns), v.ino};
  const uint64_t h = Checksum(key, sizeof(key));
  return h == 0 ? 1 : h;  // 0 is "none"
}

struct timespec TimeOf(int64_t ns) {
  return {static_cast<time_t>(ns / 1'000'000'000LL), static_cast<long>(ns % 1'000'000'000LL)};
}

}  // namespace

size_t InodeTable::KeyHash::operator()(const Key& k) const {
  return std::hash<std::string_view>()(k.path) ^ (static_cast<size_t>(k.kind) * 0x9e3779b97f4a7c15ULL);
}

size_t InodeTable::KeyHash::operator()(fuse_ino_t ino) const {
  return (*this)(KeyEq{table}.Of(ino));
}

InodeTable::Key InodeTable::KeyEq::Of(fuse_ino_t ino) const {
  const Node& n = table->At(ino);
  return {n.kind, n.path};
}

bool InodeTable::KeyEq::operator()(const Key& a, fuse_ino_t b) const {
  const Key k = Of(b);
  return a.kind == k.kind && a.path == k.path;
}

InodeTable::InodeTable(const struct stat& root_st, NodeKind root_kind, bool renumber_changed,
                       store::VersionRule versions)
    : renumber_changed_(renumber_changed),
      versions_(versions),
      by_key_(16, KeyHash{this}, KeyEq{this}) {
  Node root;
  root.nlookup = 1;
  root.kind = root_kind;
  if (root_kind == NodeKind::kLower) SetLowerAttr(root, root_st);
  nodes_.push_back(std::move(root));
  by_key_.insert(FUSE_ROOT_ID);
}

void InodeTable::SetLowerAttr(Node& n, const struct stat& st) const {
  n.version = versions_.Of(st);
  n.mode = st.st_mode;
}

bool InodeTable::Changed(const Node& n, const struct stat& st) const {
  return n.version != versions_.Of(st);
}

NodeView InodeTable::ViewOf(fuse_ino_t ino) const {
  const Node& n = At(ino);
  NodeView v;
  v.ino = ino;
  v.generation = n.generation;
  v.kind = n.kind;
  v.path = n.path;
  v.detached = n.detached;
  if (n.kind == NodeKind::kLower) {
    v.st.st_mode = n.mode;
    v.st.st_size = static_cast<off_t>(n.version.size);
    v.st.st_mtim = TimeOf(n.version.mtime_ns);
    v.st.st_ctim = TimeOf(n.version.ctime_ns);
    v.st.st_ino = n.version.ino;
  }
  return v;
}

NodeView InodeTable::Ref(NodeKind kind, const std::string& path, const struct stat& st) {
  std::unique_lock lock(mu_);
  auto it = by_key_.find(Key{kind, path});
  if (it != by_key_.end() && renumber_changed_ && kind == NodeKind::kLower && S_ISREG(st.st_mode) &&
      S_ISREG(At(*it).mode) && Changed(At(*it), st)) {
    At(*it).detached = true;  // lives on for the kernel's lookups, under no name
    by_key_.erase(it);
    it = by_key_.end();
  }
  fuse_ino_t ino;
  if (it != by_key_.end()) {
    ino = *it;
    ++At(ino).nlookup;
  } else {
    if (!free_.empty()) {
      ino = free_.back();
      free_.pop_back();
      Node& n = At(ino);
      const uint32_t generation = n.generation + 1;
      n = Node{};
      n.generation = generation;
    } else {
      nodes_.emplace_back();
      ino = nodes_.size();  // FUSE_ROOT_ID is 1: node i is at [i - 1]
    }
    Node& n = At(ino);
    n.path = path;
    n.kind = kind;
    n.nlookup = 1;
    by_key_.insert(ino);
  }
  // A lower path that now names a different file (replaced under us) keeps
  // its inode number but takes the new attributes.
  if (kind == NodeKind::kLower) SetLowerAttr(At(ino), st);
  NodeView v = ViewOf(ino);
  if (kind == NodeKind::kLower) v.st = st;
  return v;
}

std::optional<NodeView> InodeTable::Get(fuse_ino_t ino) const {
  std::shared_lock lock(mu_);
  if (!Live(ino)) return std::nullopt;
  return ViewOf(ino);
}

uint64_t InodeTable::Generation(fuse_ino_t ino) const {
  std::shared_lock lock(mu_);
  return Live(ino) ? At(ino).generation : 0;
}

fuse_ino_t InodeTable::Peek(NodeKind kind, const std::string& path) const {
  std::shared_lock lock(mu_);
  auto it = by_key_.find(Key{kind, path});
  return it == by_key_.end() ? 0 : *it;
}

void InodeTable::SetAttr(fuse_ino_t ino, struct stat& st) {
  std::unique_lock lock(mu_);
  if (!Live(ino) || At(ino).kind != NodeKind::kLower) return;
  const Node& n = At(ino);
  // A renumbered table's file node is one version for good (Ref).
  if (renumber_changed_ && S_ISREG(n.mode) && Changed(n, st)) {
    st.st_size = static_cast<off_t>(n.version.size);
    st.st_mtim = TimeOf(n.version.mtime_ns);
    st.st_ctim = TimeOf(n.version.ctime_ns);
    st.st_blocks = static_cast<blkcnt_t>((n.version.size + 511) / 512);
    return;
  }
  SetLowerAttr(At(ino), st);
}

bool InodeTable::MarkServed(fuse_ino_t ino, const store::Version& v) {
  std::unique_lock lock(mu_);
  if (!Live(ino)) return false;
  const uint64_t h = VersionHash(v);
  const bool same = At(ino).served == h;
  At(ino).served = h;
  return same;
}

bool InodeTable::Served(fuse_ino_t ino, const store::Version& v) const {
  std::shared_lock lock(mu_);
  return Live(ino) && At(ino).served == VersionHash(v);
}

void InodeTable::MarkChecked(fuse_ino_t ino) {
  std::unique_lock lock(mu_);
  if (Live(ino) && !At(ino).detached) At(ino).checked = true;
}

bool InodeTable::TakeChecked(fuse_ino_t ino) {
  std::unique_lock lock(mu_);
  if (!Live(ino)) return false;
  Node& n = At(ino);
  const bool checked = n.checked && !n.detached;
  n.checked = false;
  return checked;
}

void InodeTable::Unindex(fuse_ino_t ino) {
  // The set hashes a number by its node's key: erase by iterator, found by
  // that key, before the key changes.
  auto it = by_key_.find(Key{At(ino).kind, At(ino).path});
  if (it != by_key_.end() && *it == ino) by_key_.erase(it);
}

void InodeTable::Detach(NodeKind kind, const std::string& path) {
  std::unique_lock lock(mu_);
  auto it = by_key_.find(Key{kind, path});
  if (it == by_key_.end()) return;
  const fuse_ino_t ino = *it;
  by_key_.erase(it);
  At(ino).detached = true;
}

void InodeTable::DetachTree(NodeKind kind, const std::string& path) {
  std::unique_lock lock(mu_);
  const std::string below = path + "/";
  for (fuse_ino_t ino = FUSE_ROOT_ID; ino - FUSE_ROOT_ID < nodes_.size(); ++ino) {
    Node& n = At(ino);
    if (n.nlookup == 0 || n.detached || n.kind != kind) continue;
    if (n.path == path || n.path.compare(0, below.size(), below) == 0) {
      Unindex(ino);
      n.detached = true;
    }
  }
}

void InodeTable::Rename(NodeKind kind, const std::string& from, const std::string& to) {
  std::unique_lock lock(mu_);
  if (auto old = by_key_.find(Key{kind, to}); old != by_key_.end()) {
    const fuse_ino_t ino = *old;
    by_key_.erase(old);
    At(ino).detached = true;
  }
  const std::string below = from + "/";
  std::vector<fuse_ino_t> moved;
  for (fuse_ino_t ino = FUSE_ROOT_ID; ino - FUSE_ROOT_ID < nodes_.size(); ++ino) {
    const Node& n = At(ino);
    if (n.nlookup == 0 || n.detached || n.kind != kind) continue;
    if (n.path == from || n.path.compare(0, below.size(), below) == 0) moved.push_back(ino);
  }
  // Out of the index before any key changes, back in after.
  for (fuse_ino_t ino : moved) Unindex(ino);
  for (fuse_ino_t ino : moved) {
    Node& n = At(ino);
    n.path = to + n.path.substr(from.size());
  }
  for (fuse_ino_t ino : moved) {
    // Two moved nodes cannot collide: their old paths differed after `from`.
    by_key_.insert(ino);
  }
}

void InodeTable::Forget(fuse_ino_t ino, uint64_t n) {
  if (ino == FUSE_ROOT_ID) return;
  std::unique_lock lock(mu_);
  if (!Live(ino)) return;
  Node& node = At(ino);
  if (node.nlookup > n) {
    node.nlookup -= n;
    return;
  }
  if (!node.detached) Unindex(ino);
  const uint32_t generation = node.generation;
  node = Node{};
  node.generation = generation;  // nlookup 0: free
  free_.push_back(ino);
}

}  // namespace epochfs::fs
