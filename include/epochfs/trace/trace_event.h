// TraceEvent: one call a cache policy received, as the policy trace records it
// (the daemon's `trace.file`) and `epochfs sim --replay` reads it back.
//
// A trace is text, one JSON object per line, in the order the policy saw the
// calls (the daemon makes them under one lock):
//
//   {"ev":"start","policy":"future","budget":1073741824,"request_bytes":0,"weigh_hits":false,
//    "format":3}
//   {"ev":"add_job","job":1,"name":"a","batch_size":32,"epochs":4,"loaders":2,"compute_ns":0}
//   {"ev":"samples","job":1,"objects":[...],"sizes":[...]}
//   {"ev":"order","job":1,"epoch":0,"order":[...]}
//   {"ev":"begin_epoch","job":1,"epoch":0,"t":123}      t: monotonic ns
//   {"ev":"restart_epoch","job":1,"t":123}
//   {"ev":"end_job","job":1}
//   {"ev":"budget","budget":536870912}
//   {"ev":"request_bytes","bytes":409600}             measured (cache.request_bytes = "auto")
//   {"ev":"hit","o":77,"size":4096,"job":1,"sample":5,"t":124}
//   {"ev":"miss","o":78,"size":4096,"job":0,"sample":-1,"t":125,"load_ns":900000,"wait_ns":950000}
//   {"ev":"dropped","o":78}
//   {"ev":"prefetch","o":79,"size":4096,"job":1,"sample":6,"t":126,"load_ns":800000}
//   {"ev":"refilled","o":77,"size":4096,"job":1,"sample":5,"t":130,"wait_ns":300000}
//
// "refilled" (Policy::OnRefilled): the hit recorded earlier for that read
// (an open of a file handed over to the kernel) needed its bytes again from
// LOWER, the kernel having lost pages of it: a refill, not a hit. Not an
// access of its own ("size" is the object's; a refill in blocks reads less).
// A hit or miss of a block of a file cached in blocks also has "file": the
// file's object id (cache::Access::file); absent otherwise. "wait_ns" (a hit
// or miss: how long its reader waited, cache::Access::wait_ns) is absent when 0.
//
// Objects are the daemon's object ids (from the lower file's device and
// inode), not paths. Parsing is strict: an unknown event, a missing or
// mistyped field, or a value out of range is an error naming the line.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "epochfs/cache/policy.h"
#include "epochfs/common/status.h"

namespace epochfs::trace {

// 2: "start" has request_bytes (FuturePolicyParams::request_bytes).
// 3: "start" has weigh_hits (FuturePolicyParams::weigh_hits); hits and misses
//    have wait_ns; "request_bytes" events (Policy::SetRequestBytes). Format 2
//    is still read (weigh_hits false, waits 0).
// 4: hits that waited have "served" ("joined": a load in flight; "refill": a
//    handed-over object read again; absent: served at once); "progress"
//    events (Policy::Progress). Formats 2 and 3 are still read (every hit
//    served at once, no progress).
// 5: "refilled" events (Policy::OnRefilled). Formats 2 to 4 are still read
//    (they have none).
inline constexpr int kTraceFormat = 5;

enum class TraceKind : uint8_t {
  kStart,
  kAddJob,
  kSamples,
  kOrder,
  kBeginEpoch,
  kRestartEpoch,
  kEndJob,
  kBudget,
  kHit,
  kMiss,
  kDropped,
  kPrefetch,      // Policy::OnPrefetched
  kRequestBytes,  // Policy::SetRequestBytes
  kProgress,      // Policy::Progress
  kRefilled,      // Policy::OnRefilled
};

struct TraceEvent {
  TraceKind kind = TraceKind::kStart;
  std::string policy;                    // kStart: the live policy's name
  uint64_t budget = 0;                   // kStart, kBudget
  uint64_t request_bytes = 0;            // kStart, kRequestBytes: the cost per store request
  bool weigh_hits = false;               // kStart: FuturePolicyParams::weigh_hits
  cache::JobSpec spec;                   // kAddJob
  cache::JobId job = cache::kNoJob;      // kSamples .. kEndJob, kProgress
  uint32_t epoch = 0;                    // kOrder, kBeginEpoch, kProgress
  uint64_t now_ns = 0;                   // kBeginEpoch, kRestartEpoch, kProgress
  uint64_t position = 0;                 // kProgress
  std::vector<cache::SampleRef> samples;  // kSamples
  std::vector<uint32_t> order;           // kOrder
  cache::Access access;                  // kHit, kMiss, kPrefetch, kRefilled; kDropped: access.object only
  uint64_t load_ns = 0;                  // kMiss, kPrefetch
};

// One line, without the newline.
std::string FormatTraceEvent(const TraceEvent& e);
// One line (`line_no` for messages). InvalidArgument "trace line N: ...".
Result<TraceEvent> ParseTraceEvent(std::string_view line, size_t line_no);
// A whole trace: every non-empty line; the first must be "start".
Result<std::vector<TraceEvent>> ParseTrace(std::string_view text);

}  // namespace epochfs::trace
