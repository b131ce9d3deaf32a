// OperatorIo: what the daemon gives the one who runs it, beside the mount:
// where its log lines go (log.*: stderr, syslog, the journal, a rotated
// file), the metrics endpoint (metrics.listen) and the service manager's
// readiness (systemd's Type=notify: READY=1, STOPPING=1).
//
// In the order the daemon calls it: Prepare before anything is mounted (a
// log file or a port that cannot be had fails the mount on the terminal),
// Detach right after the fork into the background (lines to syslog, or the
// journal under systemd), StartHttp after it (the server's thread),
// Ready once the mount answers, Stopping when it ends.
// Thread safety: Ready and Stopping from any thread; the rest from the
// daemon's main thread, in that order.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "epochfs/common/log.h"
#include "epochfs/common/status.h"
#include "epochfs/common/unique_fd.h"
#include "epochfs/config/config.h"
#include "metrics_http.h"

namespace epochfs {

class OperatorIo {
 public:
  // `lower` and `mountpoint` canonical.
  Status Prepare(const Config& cfg, const std::string& lower, const std::string& mountpoint);
  // Before the fork into the background: says on stderr when the lines of
  // a background mount would be lost (no syslog, no journal, no file).
  void WarnIfLost() const;
  // After it (stderr is gone): lines to syslog, or the journal.
  Status Detach();
  // Where lines go, for the mount's first line.
  std::string LogTargets() const { return log::Describe(log_); }
  // `stats`: the stats JSON as root sees it; the endpoint serves its
  // aggregates (no job rows). Nothing without metrics.listen.
  Status StartHttp(std::function<std::string()> stats);
  void StopHttp() { http_.reset(); }
  // Started by a service manager that waits for READY=1 (NOTIFY_SOCKET).
  bool notify() const { return notify_; }
  void Ready(const std::string& lower, const std::string& mountpoint) const;
  void Stopping() const;

 private:
  log::Targets log_;
  bool under_journal_ = false;  // stderr was the journal's stream
  bool notify_ = false;
  std::string listen_;
  UniqueFd listener_;  // metrics.listen, bound before the fork
  std::unique_ptr<MetricsHttp> http_;
};

}  // namespace epochfs
