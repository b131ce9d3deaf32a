// RenderTop: one frame of `epochfs top`, from two `stats` snapshots.
//
// `now` is the stats JSON just read; `before` the one read `seconds` earlier
// (null on the first frame: rates show as "-"). The frame is plain text, one
// line per row, at most `width` columns per line:
//   a header (mountpoint, budget, used, pool, shared, objects, policy),
//   rates since `before` (reads, hits, misses /s; hit ratio of the interval
//   and of all reads; bytes/s from LOWER; lower errors, timeouts, in flight),
//   the spill tier and the governor when present, each warning, a line per
//   `epochfs warm` ("warm" rows: pid, state, files and bytes done of total),
//   then one row per job: name, state, epoch, batch, hits, misses, hit %,
//   cur and next region bytes.
// Bytes in stats that are not printable (a warning naming a path) show as '?'.
// Pure: no I/O. Cost: linear in the size of `now`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace epochfs::tools {

std::string RenderTop(const nlohmann::json& now, const nlohmann::json* before, double seconds,
                      const std::string& mountpoint, size_t width = 120);

}  // namespace epochfs::tools
