// User keys: one namespace of names per user in a directory all users share.
//
// Two places of a mount are shared by every user: `.epochfs/jobs/` (job
// names) and the top of `.spill/` (spill file and directory names). A user
// picks a NAME there; another user may pick the same NAME, and neither
// learns of the other's. The daemon keys such an entry by NAME for root and
// by "NAME@UID" for any other uid, so that keys never collide and a key says
// whose the entry is. A user other than root sees and uses only the names
// (the suffix is added on the way in and removed on the way out); root sees
// the keys and reaches everyone's entries by them. Logs and root's views show
// keys.
//
// Job names may not contain '@' (JobRegistry::ValidateName); spill names may,
// which is unambiguous because a user's key always ends in "@UID".
// Pure functions, no state.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

namespace epochfs {

// The key of `name` picked by `owner`.
inline std::string UserKey(std::string_view name, uid_t owner) {
  std::string key(name);
  if (owner != 0) key += "@" + std::to_string(owner);
  return key;
}

// The name `viewer` uses for `key`: without "@viewer" when the key is the
// viewer's (a viewer other than root); `key` itself otherwise.
inline std::string_view VisibleName(std::string_view key, uid_t viewer) {
  if (viewer == 0) return key;
  const std::string suffix = "@" + std::to_string(viewer);
  if (key.size() > suffix.size() && key.substr(key.size() - suffix.size()) == suffix) {
    return key.substr(0, key.size() - suffix.size());
  }
  return key;
}

// The same for a relative path whose first component is the shared one
// ("a/b/c" of uid 5 is "a@5/b/c").
inline std::string UserKeyPath(std::string_view path, uid_t owner) {
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos) return UserKey(path, owner);
  return UserKey(path.substr(0, slash), owner) + std::string(path.substr(slash));
}
inline std::string VisiblePath(std::string_view path, uid_t viewer) {
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos) return std::string(VisibleName(path, viewer));
  return std::string(VisibleName(path.substr(0, slash), viewer)) + std::string(path.substr(slash));
}

}  // namespace epochfs
