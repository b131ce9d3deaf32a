// OpenOwnFile: a file the daemon writes what other users must not read (the
// policy trace, the log file), opened only if it is the daemon's own.
//
// Created with mode 0600 when missing. Refused (InvalidArgument) when it is a
// symbolic link (O_NOFOLLOW), anything but a regular file (O_NONBLOCK: a FIFO
// there cannot hang the caller), owned by another user (who could read
// what is written: a file another user made first in /var/tmp, say), or
// has other hard links. Otherwise its mode is set to 0600 and, with
// `truncate`, it is emptied; the descriptor is blocking, for writing.
// Errors name `what` ("trace.file /x: ..."). Thread-safe (no state).
#pragma once

#include <string>

#include "epochfs/common/status.h"
#include "epochfs/common/unique_fd.h"

namespace epochfs {

Result<UniqueFd> OpenOwnFile(const std::string& path, const std::string& what, bool truncate);

}  // namespace epochfs
