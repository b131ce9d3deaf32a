// Replay: a policy trace recorded by the daemon (`trace.file`; the format in
// include/epochfs/trace/trace_event.h) run through a policy.
//
// The accesses come in the recorded order whatever the policy decides: there
// is no timing model, so a replay counts hits, misses and bytes read from
// LOWER, not stall. Each policy's own decisions fill a shadow store of the
// recorded budget (admitted if it fits, else refused, as the daemon's store;
// budget changes as recorded). The calls are replayed with their recorded
// times, so the policy the run used, replayed, decides as it did live: its
// hits equal the recorded ones when the readers did not race (see
// docs/simulator.md). `belady` is given the trace's own future: the next
// access of each object, in the recorded order (size-aware MIN).
// Thread safety: reentrant; a replay owns its state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/sim/engine.h"
#include "epochfs/trace/trace_event.h"

namespace epochfs::sim {

// What the live run saw.
struct TraceSummary {
  std::string policy;   // the policy the daemon ran
  uint64_t budget = 0;  // at the start
  uint64_t jobs = 0, accesses = 0, hits = 0, misses = 0, bytes_missed = 0;
  uint64_t prefetches = 0;  // "prefetch" events (loads by the prefetcher)
  // Hits that waited for LOWER (format 4 "served"): joined a load in flight,
  // or read a handed-over object again (in `hits` too: the policy's hits);
  // refills also counts the hits a "refilled" event (format 5) turned into
  // refills.
  uint64_t joined = 0, refills = 0;
  // Every byte the live run read from LOWER as the trace shows it: misses,
  // every prefetch (admitted or not) and refills.
  uint64_t bytes_read = 0;
};
TraceSummary Summarize(const std::vector<trace::TraceEvent>& events);

struct ReplayResult {
  std::string policy;
  uint64_t accesses = 0, hits = 0, misses = 0;
  // Every byte the policy had read from LOWER: its misses, and every load
  // ahead the live prefetcher made for it (a policy with Prefetching: the
  // trace's "prefetch" events, admitted or not; the others prefetch
  // nothing).
  uint64_t bytes_read = 0;
  uint64_t prefetched = 0;  // "prefetch" events the policy admitted
  uint64_t prefetch_bytes = 0;  // bytes of its "prefetch" events (in bytes_read)
  uint64_t admissions = 0, evictions = 0, refused = 0;
  uint64_t rejected_calls = 0;  // declarations the policy refused (as it would live)
};

// REQUIRES: events from trace::ParseTrace (the first is "start"). Error: the
// policy broke its contract (CheckInvariants every `check_every` events, 0:
// at the end only).
Result<ReplayResult> Replay(const std::vector<trace::TraceEvent>& events, PolicyKind kind,
                            uint64_t check_every = 0);

// Table (or JSON) of the live run and every replay.
std::string FormatReplayTable(const std::string& origin, const TraceSummary& live,
                              const std::vector<ReplayResult>& runs);
std::string FormatReplayJson(const std::string& origin, const TraceSummary& live,
                             const std::vector<ReplayResult>& runs);

}  // namespace epochfs::sim
