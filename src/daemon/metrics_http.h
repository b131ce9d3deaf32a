// MetricsHttp: the metrics over HTTP (metrics.listen): GET /metrics answers
// the Prometheus text of the aggregates (control/metrics_text.h with
// aggregates_only: it cannot know who asks, so no series names a job).
// Served by libmicrohttpd on one thread of its own; anything but GET or
// HEAD is 405, any other path 404. At most 16 connections, each closed
// after 10 s idle.
//
// The socket is bound by Listen before the daemon forks into the
// background (a port already taken fails the mount, with the message on
// the terminal); Start runs the server after it (threads do not survive a
// fork).
// Thread safety: `text` is called from the server's thread; Start and the
// destructor (which stops the thread) from the daemon's.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "epochfs/common/listen_address.h"
#include "epochfs/common/status.h"
#include "epochfs/common/unique_fd.h"

struct MHD_Daemon;

namespace epochfs {

class MetricsHttp {
 public:
  // A listening TCP socket on `address` (close-on-exec). IoError naming the
  // address when it cannot be bound (taken, not this host's).
  static Result<UniqueFd> Listen(const ListenAddress& address);
  static Result<std::unique_ptr<MetricsHttp>> Start(UniqueFd listener,
                                                    std::function<std::string()> text);
  ~MetricsHttp();
  MetricsHttp(const MetricsHttp&) = delete;
  MetricsHttp& operator=(const MetricsHttp&) = delete;

 private:
  explicit MetricsHttp(std::function<std::string()> text) : text_(std::move(text)) {}
  std::function<std::string()> text_;
  MHD_Daemon* daemon_ = nullptr;
};

}  // namespace epochfs
