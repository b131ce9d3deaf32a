// What `epochfs warm` is asked to load: PATH arguments, and the lines of a
// `--from LIST` (one path a line, relative to the mount's root).
//
// ParseWarmList is pure (no file system): each non-empty line becomes an
// entry ROOT/LINE, its origin "LIST:N" (N from 1) for the messages of later
// steps; a line that cannot name a path inside the mount (a NUL, an absolute
// path outside ROOT, `..` leading out of it) is a bad line: "LIST:N: 'LINE':
// reason" (the line quoted, control bytes as \xHH, so a stray carriage return
// shows). Empty lines are skipped; nothing else is trimmed or lost: the last
// line needs no newline, and spaces belong to the name.
// Thread safety: none needed (no shared state).
#pragma once

#include <string>
#include <vector>

namespace epochfs::tools {

struct WarmEntry {
  std::string path;    // absolute, inside the mount
  std::string origin;  // "LIST:N" for a listed path; "" for a PATH argument
};

struct WarmList {
  std::vector<WarmEntry> entries;
  std::vector<std::string> bad;  // one message per bad line
};

// `root`: the mount's root, absolute, canonical (no trailing '/' but "/").
WarmList ParseWarmList(const std::string& text, const std::string& list_name,
                       const std::string& root);

// `s` quoted, bytes below 0x20 and 0x7f as \xHH.
std::string QuotedName(const std::string& s);

}  // namespace epochfs::tools
