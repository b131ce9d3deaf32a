// ControlTree: the `.epochfs/` tree of a mount.
//
//   .epochfs/version   r  "epochfs X.Y.Z\nprotocol 1\n"
//   .epochfs/stats     r  JSON snapshot of the daemon (see man epochfs(8))
//
// The stats text comes from a callback so that this module does not depend on
// the daemon's parts. Thread safety: thread-safe (stateless apart from the
// callback, which must itself be thread-safe).
#pragma once

#include <functional>
#include <string>

#include "epochfs/control/control_plane.h"

namespace epochfs::control {

inline constexpr int kProtocolVersion = 1;

class ControlTree : public ControlPlane {
 public:
  using StatsFn = std::function<std::string()>;
  explicit ControlTree(StatsFn stats) : stats_(std::move(stats)) {}

  Result<VNode> Stat(const std::string& path) const override;
  Result<std::vector<std::string>> List(const std::string& path) const override;
  Result<std::string> Read(const std::string& path) const override;

 private:
  StatsFn stats_;
};

}  // namespace epochfs::control
