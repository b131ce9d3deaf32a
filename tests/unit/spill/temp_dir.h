// TempDir: a directory of the spill tests' own on a real disk (O_DIRECT:
// tmpfs may refuse it), under $EPOCHFS_SPILL_TEST_DIR or /var/tmp, removed
// with everything in it when the TempDir goes. path() is "" when it could not
// be made.
#pragma once

#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

namespace epochfs::spill::testing {

class TempDir {
 public:
  explicit TempDir(const char* prefix = "epochfs-spill-test") {
    const char* base = getenv("EPOCHFS_SPILL_TEST_DIR");
    std::string tmpl = std::string(base ? base : "/var/tmp") + "/" + prefix + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (char* p = mkdtemp(buf.data())) path_ = p;
  }
  ~TempDir() {
    if (!path_.empty()) {
      nftw(path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return remove(p); },
           16, FTW_DEPTH | FTW_PHYS);
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace epochfs::spill::testing
