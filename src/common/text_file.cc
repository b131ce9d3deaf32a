#include "epochfs/common/text_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace epochfs {

Result<std::string> ReadTextFile(const std::string& path, std::string_view what) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    int err = errno;
    std::string msg = "cannot open " + std::string(what) + " " + path + ": " + std::strerror(err);
    if (err == ENOENT) return NotFound(std::move(msg));
    if (err == EACCES || err == EPERM) return PermissionDenied(std::move(msg));
    return IoError(std::move(msg));
  }
  std::string text;
  char buf[16384];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  bool failed = std::ferror(f) != 0;
  int err = errno;
  std::fclose(f);
  if (failed) return IoError("cannot read " + std::string(what) + " " + path + ": " + std::strerror(err));
  return text;
}

}  // namespace epochfs
