#include "epochfs/tools/mount_client.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "epochfs/common/text_file.h"

namespace epochfs::tools {

Result<std::string> FindMountRoot(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) {
    return ErrnoStatus(Code::kNotFound, errno, path);
  }
  std::string dir = buf;
  while (true) {
    Result<std::string> v = ReadTextFile((dir == "/" ? "" : dir) + "/.epochfs/version", "version");
    if (v.ok() && v.value().rfind("epochfs ", 0) == 0) return dir;
    if (dir == "/") break;
    const size_t slash = dir.rfind('/');
    dir = slash == 0 ? "/" : dir.substr(0, slash);
  }
  return NotFound(path + " is not inside an epochfs mount");
}

Result<nlohmann::json> ReadStats(const std::string& root) {
  Result<std::string> text = ReadTextFile(root + "/.epochfs/stats", "stats");
  if (!text.ok()) return text.status();
  nlohmann::json j = nlohmann::json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument(root + "/.epochfs/stats: not a JSON object");
  }
  return j;
}

}  // namespace epochfs::tools
