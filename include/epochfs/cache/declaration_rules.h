// The rules every job-aware policy applies to what a job declares (Policy's
// AddJob, SetSamples and SetOrder in include/epochfs/cache/policy.h), in one
// place so that the epoch and the future policy refuse the same declarations
// with the same words.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "epochfs/cache/policy.h"
#include "epochfs/common/status.h"

namespace epochfs::cache {

// Orders a job may have declared at once (the current, the next and a few
// ahead); SetOrder refuses one more.
inline constexpr size_t kMaxDeclaredOrders = 8;

// AddJob: the id is not 0 and not `taken` by a registered job; batch_size >= 1.
// InvalidArgument or Exists otherwise.
Status CheckNewJob(const JobSpec& spec, bool taken);

// SetSamples: `count` samples, at least 1 and at most 2^31-1, and the list not
// yet `fixed` (an order declared or an epoch begun). InvalidArgument or Busy.
Status CheckSamples(size_t count, bool fixed);

// What a policy knows of the job when an order arrives.
struct OrderContext {
  uint64_t samples = 0;  // length of the sample list (0: not written yet)
  uint32_t epochs = 0;   // of the whole run (0: unknown)
  bool started = false;  // an epoch has begun
  uint32_t current = 0;  // that epoch, when started
};

// Checks epoch `epoch`'s order: the sample list written, the epoch within the
// run and not over, the order non-empty, every index in range and none twice.
// On success `pos` (if given) is the inverse: pos[sample] = its position, or
// −1 when the order leaves it out. InvalidArgument, prefixed "order E: ",
// otherwise.
Status CheckOrder(const OrderContext& job, uint32_t epoch, const std::vector<uint32_t>& order,
                  std::vector<int32_t>* pos);

}  // namespace epochfs::cache
