// The rules for what a job declares about itself, apart from its orders
// (declared_orders.h): the job, its sample list, its epoch markers and its
// position reports. The control registry (control/) checks a job's control
// files with them; the job-aware cache policies (cache/) check the same
// declarations with them when the simulator or a test drives them directly.
// One rule, one message: the messages are the ones a job reads in its
// `status` (last_error, after "FILE: ").
//
// The module sits below cache/ and control/ and includes only common/.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "epochfs/common/status.h"

namespace epochfs::declarations {

// A new job: the id is not 0 (0 marks an access no job claims) and not
// `taken` by a registered job; batch_size >= 1. InvalidArgument or Exists.
Status CheckNewJob(uint32_t id, uint32_t batch_size, bool taken);

// A sample list of `count` samples: at least 1 and at most 2^31-1 (positions
// are int32), and the list not yet `fixed` (an order declared or an epoch
// begun). InvalidArgument or Busy.
Status CheckSamples(size_t count, bool fixed);

// What needs the sample list first.
enum class NeedsSamples : uint8_t { kOrder, kEpochMarker, kPosition };
// InvalidArgument unless the sample list is `written`.
Status CheckSamplesWritten(bool written, NeedsSamples what);

// Epoch `epoch` is within a run of `epochs` epochs (0 .. epochs-1; `epochs` 0:
// unknown, any epoch is). InvalidArgument otherwise.
Status CheckEpochInRun(uint32_t epochs, uint32_t epoch);

// An epoch marker (the job begins `epoch`): not before the `current` epoch
// (none: no epoch has begun). InvalidArgument otherwise.
Status CheckEpochMarker(std::optional<uint32_t> current, uint32_t epoch);

// What a holder of a job's declarations (the registry's tracker, a policy)
// knows of the job when it checks one.
struct JobView {
  uint64_t samples = 0;             // length of the sample list (0: not written yet)
  uint32_t epochs = 0;              // of the whole run (0: unknown)
  std::optional<uint32_t> current;  // the epoch begun (none: no epoch yet)
};

// A policy told that the job begins `epoch`: the sample list written, the
// epoch within the run and not before the current one (the three rules
// above, in that order).
Status CheckEpochBegins(const JobView& job, uint32_t epoch);

// A position report: the job has handed out the first `position` samples of
// epoch `epoch`'s order. `current`: the job's current epoch (none: not begun);
// `order_size`: the length of the order held for `epoch` (0: none held).
// Accepted when `epoch` is the current epoch, its order is held and
// `position` is at most its length; a report for an epoch before the current
// one is late: returns Late (the caller ignores it). InvalidArgument
// otherwise.
enum class PositionVerdict : uint8_t { kAccept, kLate };
Result<PositionVerdict> CheckPosition(std::optional<uint32_t> current, uint64_t order_size,
                                      uint32_t epoch, uint64_t position);

}  // namespace epochfs::declarations
