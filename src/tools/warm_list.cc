#include "epochfs/tools/warm_list.h"

#include <cstdio>

namespace epochfs::tools {
namespace {

// `rel` with "." and ".." resolved lexically; false when ".." leads above it.
bool Normalize(const std::string& rel, std::string* out) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t slash = rel.find('/', start);
    if (slash == std::string::npos) slash = rel.size();
    const std::string part = rel.substr(start, slash - start);
    if (part == "..") {
      if (parts.empty()) return false;
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = slash + 1;
  }
  out->clear();
  for (const std::string& p : parts) *out += (out->empty() ? "" : "/") + p;
  return true;
}

}  // namespace

std::string QuotedName(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "'";
}

WarmList ParseWarmList(const std::string& text, const std::string& list_name,
                       const std::string& root) {
  WarmList out;
  const std::string prefix = root == "/" ? "/" : root + "/";
  size_t start = 0, n = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++n;
    if (line.empty()) continue;
    const std::string origin = list_name + ":" + std::to_string(n);
    const auto bad = [&](const std::string& why) {
      out.bad.push_back(origin + ": " + QuotedName(line) + ": " + why);
    };
    if (line.find('\0') != std::string::npos) {
      bad("a NUL byte in the path");
      continue;
    }
    std::string rel = line;
    if (line[0] == '/') {
      if (line != root && line.compare(0, prefix.size(), prefix) != 0) {
        bad("an absolute path outside the mount " + root + " (lines are relative to it)");
        continue;
      }
      rel = line == root ? "" : line.substr(prefix.size());
    }
    std::string norm;
    if (!Normalize(rel, &norm)) {
      bad("leads out of the mount " + root);
      continue;
    }
    out.entries.push_back({norm.empty() ? root : prefix + norm, origin});
  }
  return out;
}

}  // namespace epochfs::tools
