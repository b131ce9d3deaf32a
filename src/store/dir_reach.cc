#include "epochfs/store/dir_reach.h"

#include <string_view>
#include <unordered_map>

namespace epochfs::store {
namespace {

// The directory above `dir` ("" above a top-level one); REQUIRES: dir != "".
std::string_view ParentOf(std::string_view dir) {
  const size_t slash = dir.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : dir.substr(0, slash);
}

// How far a user gets towards a directory, walking down from the root.
enum class Walk : signed char {
  kUnknown,
  kSearchable,  // reached, and they may search it
  kHidden,      // not there for them: it, or one above it, they may not search
  kBroken,      // not there at all: it, or one above it, is missing or no directory
};

}  // namespace

Result<std::vector<DirReach>> ReachDirs(const Lower& lower, const std::vector<std::string>& dirs,
                                        const Credentials& who) {
  std::vector<DirReach> out;
  out.reserve(dirs.size());
  if (who.uid == 0) {  // root reaches whatever exists: the directories alone
    for (Result<struct stat>& st : lower.StatMany(dirs)) {
      const bool dir = st.ok() && S_ISDIR(st.value().st_mode);
      out.push_back({std::move(st), dir});
    }
    return out;
  }
  // Every directory of the walks, each once: the given ones, those above
  // them, and the root. Keys are views into `dirs`.
  uint64_t given_bytes = 0;
  for (const std::string& d : dirs) given_bytes += d.size();
  const uint64_t budget = 2 * given_bytes + kReachPathBytes;
  uint64_t walk_bytes = 0;
  std::unordered_map<std::string_view, size_t> at;  // path → index in `walk`
  std::vector<std::string> walk;
  std::vector<size_t> parent;  // of walk[i]; walk.size() for the root
  for (const std::string& d : dirs) {
    std::string_view p = d;
    size_t child = SIZE_MAX;  // the entry whose parent p is
    for (;;) {
      auto [it, added] = at.emplace(p, walk.size());
      if (child != SIZE_MAX) parent[child] = it->second;
      if (!added) break;  // and everything above it
      walk.emplace_back(p);
      parent.push_back(SIZE_MAX);
      walk_bytes += p.size();
      if (walk_bytes > budget) {
        return InvalidArgument("the samples' directories and those above them come to more than " +
                               std::to_string(budget) + " bytes of paths to check from the "
                               "dataset's root (twice the directories' own bytes and " +
                               std::to_string(kReachPathBytes >> 20) + " MiB)");
      }
      if (p.empty()) break;
      child = it->second;
      p = ParentOf(p);
    }
  }
  const std::vector<Result<struct stat>> stats = lower.StatMany(walk);
  std::vector<Walk> state(walk.size(), Walk::kUnknown);
  auto own = [&](size_t i) {
    const Result<struct stat>& st = stats[i];
    if (!st.ok() || !S_ISDIR(st.value().st_mode)) return Walk::kBroken;
    return MayAccess(who, st.value(), kMayExec) ? Walk::kSearchable : Walk::kHidden;
  };
  // The state of walk[i], from the root down: the first stop decides.
  std::vector<size_t> chain;
  auto state_of = [&](size_t i) {
    chain.clear();
    size_t j = i;
    while (j != SIZE_MAX && state[j] == Walk::kUnknown) {
      chain.push_back(j);
      j = parent[j];
    }
    Walk above = j == SIZE_MAX ? Walk::kSearchable : state[j];
    for (auto c = chain.rbegin(); c != chain.rend(); ++c) {
      state[*c] = above == Walk::kSearchable ? own(*c) : above;
      above = state[*c];
    }
    return state[i];
  };
  for (const std::string& d : dirs) {
    const size_t i = at.at(d);
    const Walk reached = d.empty() ? Walk::kSearchable : state_of(parent[i]);
    if (reached == Walk::kSearchable) {  // D is looked up: its own stat answers
      out.push_back({stats[i], state_of(i) == Walk::kSearchable});
    } else if (reached == Walk::kBroken && !stats[i].ok()) {
      out.push_back({stats[i], false});
    } else {
      out.push_back({MissingOnLower(d), false});
    }
  }
  return out;
}

}  // namespace epochfs::store
