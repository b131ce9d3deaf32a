// DirReach: the directories of LOWER as a given user reaches them.
//
// The daemon reads LOWER as root. A job's samples list names directories
// on its owner's behalf, and what the daemon then says of them (a failed
// samples write) and does in them (prefetches) must be only what that user
// could learn and do themselves. The kernel lets a user look a directory D
// up only when they may search (x) every directory above it, from LOWER's
// root down; and look names up in D only when they may search D too
// (MayAccess on LOWER's owner, group and mode).
//
// ReachDirs stats each distinct directory of the paths given, and each
// directory above them, once (Lower::StatMany, one batch): a list of a
// million samples in a thousand directories costs about a thousand stats.
// A directory above which the user may not search is answered exactly as
// one that does not exist (MissingOnLower), whatever it really is. For root
// (uid 0) only the directories themselves are stat'ed. The verdicts hold
// for this one call: LOWER may change after it.
// Each stat walks its path from the root, so the walk's cost is the bytes of
// the distinct paths stat'ed: bounded by kReachPathBytes beyond twice the
// bytes of the directories given (InvalidArgument past it, decided from the
// names alone, before any stat), so that a list of deep paths that differ
// at the top (each directory above another a stat of its own) cannot make
// the checks quadratic in its size.
// Thread safety: a pure function of LOWER's state; thread-safe as Lower is.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "epochfs/common/access_rule.h"
#include "epochfs/common/status.h"
#include "epochfs/store/lower.h"

namespace epochfs::store {

struct DirReach {
  // D's attributes, or why `who` cannot look D up: its stat's error, or
  // MissingOnLower(D) when a directory above it may not be searched.
  Result<struct stat> st;
  // `who` may look names up in D: it is a directory they reach and may
  // search.
  bool searchable = false;
};

inline constexpr uint64_t kReachPathBytes = uint64_t{16} << 20;

// One verdict per entry of `dirs` (paths relative to LOWER's root, normalised;
// "" is the root), in order.
Result<std::vector<DirReach>> ReachDirs(const Lower& lower, const std::vector<std::string>& dirs,
                                        const Credentials& who);

}  // namespace epochfs::store
