#include "epochfs/control/control_tree.h"

namespace epochfs::control {

Result<VNode> ControlTree::Stat(const std::string& path) const {
  if (path.empty()) return VNode{true, false, 0, 0};
  if (path == "version" || path == "stats") return VNode{false, false, 0, 0};
  return NotFound(path);
}

Result<std::vector<std::string>> ControlTree::List(const std::string& path) const {
  if (path.empty()) return std::vector<std::string>{"stats", "version"};
  return NotFound(path);
}

Result<std::string> ControlTree::Read(const std::string& path) const {
  if (path == "version") {
    return std::string("epochfs ") + EPOCHFS_VERSION + "\nprotocol " +
           std::to_string(kProtocolVersion) + "\n";
  }
  if (path == "stats") return stats_() + "\n";
  return NotFound(path);
}

}  // namespace epochfs::control
