// The "future" policy: keeps what the jobs will read soonest.
//
// Every registered job declares its current and next epoch's order; together
// with each job's position and measured pace that says, for every object,
// when it will next be read and by whom (DeclaredFuture). The policy keeps the
// objects whose next read comes soonest, weighing each by its size
// (NextUseCache: evict the largest (time to next read) × size; bypass a loaded
// object that would itself be the first to go) — the simulator's Belady
// bound run online, with the declared orders in place of the oracle. No job
// is starved by rank or arrival: a late, fast job's reads come soonest and win
// space; a dataset shared by jobs is held once, filed under the job that reads
// it first. Reads no job declared are cached least-recently-used in the space
// the declared future leaves idle. docs/policy.md compares it with the epoch
// policy (seed 000) on the simulator's grid.
//
// Thread safety: not thread-safe, like every Policy.
#pragma once

#include <cstdint>
#include <memory>

#include "epochfs/cache/policy.h"

namespace epochfs::cache {

struct FuturePolicyParams {
  uint64_t budget_bytes = 0;
  // Pace assumed for a job before it has read 64 samples and reported no
  // compute time (ns per read).
  uint64_t default_pace_ns = 1'000'000;
  // The cache hears only of the reads that miss the kernel's page cache
  // (fuse.no_open): a read at a job's position p, and the job's own progress
  // report (Policy::Progress), imply its declared reads before p - W, and a
  // new epoch the rest of the one it ends (DeclaredFuture::ImplyReads,
  // DeclaredFuture::Progress).
  bool implied_reads = false;
  // What one store request costs beyond its bytes, in bytes of transfer
  // (NextUseCache: a miss of s bytes costs s + request_bytes); 0: a store
  // whose bandwidth binds, where a byte saved is a byte saved whatever the
  // file's size.
  uint64_t request_bytes = 0;
  // The readers' misses start in the order of BytesLeft (lower.read_slots
  // != 0): prefetch hints follow it too, the job first in line first, then
  // soonest first. false: soonest first across jobs.
  bool order_jobs = false;
  // Weigh a hit by what it saves the job that reads it (its loaders' share
  // of time waiting for storage; DeclaredFuture::set_weigh_hits).
  bool weigh_hits = false;
};

std::unique_ptr<Policy> MakeFuturePolicy(const FuturePolicyParams& params);

}  // namespace epochfs::cache
