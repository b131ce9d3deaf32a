// ReadTextFile: the whole of a small file (config, model, workload) as a string.
//
// Errors name `what` and the path: NotFound ("cannot open WHAT PATH: ..."),
// PermissionDenied, or IoError (open or read failure).
// Thread safety: none needed (no shared state).
#pragma once

#include <string>
#include <string_view>

#include "epochfs/common/status.h"

namespace epochfs {

Result<std::string> ReadTextFile(const std::string& path, std::string_view what);

}  // namespace epochfs
