// The policy trace (`trace.file`): what the cache policy saw, one JSON line per
// call (include/epochfs/trace/trace_event.h), for `epochfs sim --replay`.
//
// RecordPolicyTrace opens PATH (created mode 0600, or truncated when it is a
// regular file of the daemon's user with one link; anything else, a symlink or
// a FIFO or another user's file, is refused) and wraps `policy` in a trace::RecordingPolicy whose lines go to
// it through a 64 KiB buffer: the first line at once (before the daemon
// forks), then a write per 64 KiB, the rest when the policy is destroyed (at
// unmount; a killed daemon loses at most the last 64 KiB). A failed write
// stops the trace with one warning; the mount goes on. So does the line that
// would take the file past `max_bytes` (trace.max_bytes): the file then holds
// whole lines only, and replays. `params`: the
// policy's parameters "start" records (cache.request_bytes, cache.weigh_hits).
// Thread safety: the policy's (every call is made under the cache's lock).
#pragma once

#include <memory>
#include <string>

#include "epochfs/cache/policy.h"
#include "epochfs/common/status.h"
#include "epochfs/trace/recording_policy.h"

namespace epochfs {

Result<std::unique_ptr<cache::Policy>> RecordPolicyTrace(const std::string& path,
                                                         uint64_t max_bytes,
                                                         std::unique_ptr<cache::Policy> policy,
                                                         trace::RecordedParams params);

}  // namespace epochfs
