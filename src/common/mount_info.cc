#include "epochfs/common/mount_info.h"

#include <fstream>
#include <sstream>

namespace epochfs {
namespace {

// Undoes mountinfo's escapes: \ooo (three octal digits) is one byte.
std::string Unescape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const char a = s[i + 1], b = s[i + 2], c = s[i + 3];
      if (a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out.push_back(static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

std::vector<MountEntry> ReadMountInfo(const std::string& path) {
  std::vector<MountEntry> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mount_point options [optional...] - fstype source super
    std::istringstream f(line);
    std::string id, parent, devno, root, point, field;
    if (!(f >> id >> parent >> devno >> root >> point)) continue;
    while (f >> field && field != "-") {
    }
    MountEntry e;
    e.id = id;
    e.mount_point = Unescape(point);
    e.devno = devno;
    f >> e.fstype >> e.source;
    e.source = Unescape(e.source);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace epochfs
