// The multi-job epoch policy of seed 000 (patent CN114968588A).
//
// Each job warms up uncached (its first epoch, or its first warmup_batches
// batches) while the policy measures its epoch time T, its mean per-sample
// load time t_s and its compute per batch. It then joins a list sorted by T
// (fastest first), reserves what it needs out of its equal share of the budget,
// and caches during epoch K the samples it will read in epoch K+1 (region
// `next`), at most e_i per batch of K+1's order (batch counters). A hit in `cur`
// returns the object's bytes to a global free pool; a job short of space asks
// the pool, which grants λ_i times the request (λ_i larger for faster jobs),
// and when the pool is empty takes a unit from the job before it in the list,
// evicting a random sample of that job's `next` if it must. A job in its last
// epoch admits nothing; EndJob returns everything to the pool. Reads no job
// claims use the idle part of the pool as an LRU region that every grant to a
// job reclaims first (EpochPolicyParams::share_idle); what a job is about to
// read there (its warm-up epoch's reads) it adopts instead.
//
// docs/policy.md states every formula, the ones the patent leaves out, and the
// choices made beyond it (shared objects, late reads, pool-vs-own-quota order).
//
// Thread safety: not thread-safe, like every Policy.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "epochfs/cache/policy.h"

namespace epochfs::cache {

struct EpochPolicyParams {
  uint64_t budget_bytes = 0;
  double gain_max = 2.0;        // λ_max (policy.gain_max), >= 0
  uint32_t warmup_batches = 0;  // 0: the whole first epoch (warmup.batches)
  uint64_t seed = 1;            // random eviction victims (S37)
  // Batches of the new epoch during which the previous epoch's unused `cur`
  // objects are kept (region kTail) for late reads; 0: 2·loaders.
  uint32_t tail_batches = 0;
  // Reads no job claims (no job, an unknown job, a job in warm-up or done, a
  // file outside the job's sample list) are cached LRU in the idle part of the
  // free pool (the shared region, shared_bytes()). Strictly subordinate: every
  // grant to a job evicts shared objects (least recently used first) when the
  // truly free bytes do not cover it, except those the job adopts: at the end
  // of its warm-up, shared objects of its next order enter `next` (≤ e_i per
  // batch, within the reservation); at an epoch's start, those of its order
  // enter `cur` (within its unused quota). false: unclaimed reads are never
  // cached, and the policy is the patent's.
  bool share_idle = true;
};

// Where a job holds one of its samples.
//   kCur:  entered during the previous epoch, for use in the current one;
//   kNext: entered during the current epoch, for use in the next one;
//   kTail: the previous epoch's kCur leftovers, kept for a short window after
//          an epoch change so that late (out-of-order) reads still hit.
enum class Region : uint8_t { kNone, kCur, kNext, kTail };
const char* RegionName(Region r);

// The epoch policy's own introspection (tests, invariant checks), reached
// through Policy::epoch_regions(): nullptr for every other policy.
class EpochRegions {
 public:
  virtual ~EpochRegions() = default;
  // Where `job` holds sample `sample` (kNone for an unknown job or sample).
  virtual Region Where(JobId job, uint32_t sample) const = 0;
  // The batch counters over the job's next order (S32), empty when none.
  virtual std::vector<uint32_t> NextCounters(JobId job) const = 0;
};

std::unique_ptr<Policy> MakeEpochPolicy(const EpochPolicyParams& params);

}  // namespace epochfs::cache
