#include "epochfs/common/bytes_text.h"

#include <cstdio>

namespace epochfs {

std::string HumanBytes(uint64_t bytes, int decimals) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, kUnits[u]);
  return buf;
}

}  // namespace epochfs
