// RecordingPolicy: a cache::Policy that forwards every call to another policy
// and hands each call that can change its state (accesses, drops, job
// declarations, budget changes) to a sink as one trace line
// (epochfs/trace/trace_event.h), before forwarding it. Queries are forwarded
// unrecorded. The first line, written at construction, names the policy and
// its budget.
//
// The daemon wraps its policy in one when `trace.file` is set and gives it a
// sink that appends to that file; `epochfs sim --replay` replays the lines.
// No I/O here: the sink does it.
// Thread safety: as the wrapped policy (the daemon serialises every call); the
// sink is called from inside those calls.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "epochfs/cache/policy.h"

namespace epochfs::trace {

using TraceSink = std::function<void(const std::string& line)>;

// The inner policy's parameters "start" records, so that a replay builds it
// as the live run did: its cost per store request (weighing sizes) and
// whether it weighs hits by what they save.
struct RecordedParams {
  uint64_t request_bytes = 0;
  bool weigh_hits = false;
};
std::unique_ptr<cache::Policy> MakeRecordingPolicy(std::unique_ptr<cache::Policy> inner,
                                                   TraceSink sink, RecordedParams params = {});

}  // namespace epochfs::trace
