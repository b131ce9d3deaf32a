#include "epochfs/common/text_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace epochfs {

Result<std::string> ReadTextFile(const std::string& path, std::string_view what) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    int err = errno;
    // The contract (text_file.h): NotFound, PermissionDenied or IoError.
    const Code code = err == ENOENT                   ? Code::kNotFound
                      : err == EACCES || err == EPERM ? Code::kPermissionDenied
                                                      : Code::kIoError;
    return ErrnoStatus(code, err, "cannot open " + std::string(what) + " " + path);
  }
  std::string text;
  char buf[16384];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  bool failed = std::ferror(f) != 0;
  int err = errno;
  std::fclose(f);
  if (failed) return ErrnoStatus(Code::kIoError, err, "cannot read " + std::string(what) + " " + path);
  return text;
}

}  // namespace epochfs
