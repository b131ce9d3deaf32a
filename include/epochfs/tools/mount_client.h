// What the client commands (`epochfs top`, `epochfs warm`) need of a mount:
// where it is, given any path inside it, and its stats.
//
// FindMountRoot: the nearest ancestor of `path` (itself included, symlinks
// resolved) with a `.epochfs/version` that names epochfs; NotFound
// "PATH is not inside an epochfs mount" otherwise.
// ReadStats: `ROOT/.epochfs/stats` parsed; IoError or InvalidArgument.
// Thread safety: none needed (no shared state).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "epochfs/common/status.h"

namespace epochfs::tools {

Result<std::string> FindMountRoot(const std::string& path);
Result<nlohmann::json> ReadStats(const std::string& root);

}  // namespace epochfs::tools
