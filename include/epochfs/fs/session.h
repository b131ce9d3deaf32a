// Session: one mounted FUSE session (RAII).
//
// Mount() creates the session, installs SIGTERM/SIGINT/SIGHUP handlers that end
// the loop whichever thread takes the signal (MountOptions::signal_handlers;
// src/fs/exit_signals.h), and mounts; Run() serves requests on a multi-threaded loop until
// the filesystem is unmounted (fusermount3 -u) or a signal arrives; the
// destructor unmounts and destroys the session.
// Errors: Mount() returns InvalidArgument for bad FUSE options and IoError
// (with libfuse's own words) when the kernel mount fails.
// Thread safety: one thread owns a Session.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/fs/filesystem.h"

namespace epochfs::fs {

struct MountOptions {
  std::string mountpoint;
  std::string fsname;                 // shown in /proc/mounts
  std::vector<std::string> fuse_opts;  // e.g. "allow_other", "max_read=N"
  bool debug = false;                 // libfuse request tracing
  unsigned threads = 4;               // max worker threads
  unsigned read_ahead_kb = 1024;      // kernel readahead of the mount (0: leave it)
  // SIGTERM/SIGINT/SIGHUP end this session's loop. libfuse keeps one session
  // for its handlers: a second session of the process sets this false.
  bool signal_handlers = true;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> Mount(Filesystem& fs, const MountOptions& opts);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Serves until unmounted or signalled. Returns OK on a clean end; a
  // failed INIT (the kernel refused the mount's parameters) is an error.
  // REQUIRES: any fork into the background done first (threads start here).
  Status Run();

 private:
  Session() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace epochfs::fs
