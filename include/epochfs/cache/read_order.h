// ReadOrder: the optional part of a Policy that orders the readers' loads
// from LOWER when more wait than may run (lower.read_slots). A policy that
// has it returns it from Policy::read_order(); for the others every key is 0
// and no job shares with another (the loads start in the order they asked).
// Only the "future" policy has it.
//
// Ownership: part of the policy object; lives as long as it.
// Thread safety: not thread-safe, like the Policy it belongs to.
#pragma once

#include <cstdint>
#include <vector>

#include "epochfs/cache/policy.h"

namespace epochfs::cache {

class ReadOrder {
 public:
  virtual ~ReadOrder() = default;
  // The job with the smallest key loads first, ties in the order they asked.
  // The future policy: the bytes `job` has left to read by its declaration
  // (the rest of its current epoch and its later epochs, at its mean sample
  // size), so that the job nearest its end gets the store first and the
  // cache can hold its data (shortest remaining work first); Policy::kNoLeft
  // for a job whose epochs are unknown. Reads of no job (kNoJob) and unknown
  // jobs: 0.
  virtual uint64_t BytesLeft(JobId job) const = 0;
  // The jobs whose samples lists share objects with `job`, sorted: their
  // loads and `job`'s are not ordered against each other (a load for one
  // serves the other). O(jobs sharing).
  virtual std::vector<JobId> Sharers(JobId job) const = 0;
};

}  // namespace epochfs::cache
