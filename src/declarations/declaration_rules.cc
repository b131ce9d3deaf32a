#include "epochfs/declarations/declaration_rules.h"

#include <limits>
#include <string>

namespace epochfs::declarations {

Status CheckNewJob(uint32_t id, uint32_t batch_size, bool taken) {
  if (id == 0) return InvalidArgument("job id 0 is reserved");
  if (batch_size == 0) return InvalidArgument("batch_size must be at least 1");
  if (taken) return Status(Code::kExists, "job id " + std::to_string(id) + " is already registered");
  return Status::Ok();
}

Status CheckSamples(size_t count, bool fixed) {
  if (count == 0) return InvalidArgument("the sample list is empty");
  if (count > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return InvalidArgument("more than 2^31-1 samples");
  }
  if (fixed) return Status(Code::kBusy, "the sample list is fixed once an order was declared");
  return Status::Ok();
}

Status CheckSamplesWritten(bool written, NeedsSamples what) {
  if (written) return Status::Ok();
  switch (what) {
    case NeedsSamples::kOrder:
      return InvalidArgument("write samples before the orders");
    case NeedsSamples::kEpochMarker:
      return InvalidArgument("write samples before the epoch");
    case NeedsSamples::kPosition:
      break;
  }
  return InvalidArgument("write samples first");
}

Status CheckEpochInRun(uint32_t epochs, uint32_t epoch) {
  if (epochs == 0 || epoch < epochs) return Status::Ok();
  return InvalidArgument("epoch " + std::to_string(epoch) + " is beyond the job's last epoch " +
                         std::to_string(epochs - 1) + " (epochs are 0-based)");
}

Status CheckEpochMarker(std::optional<uint32_t> current, uint32_t epoch) {
  if (!current || epoch >= *current) return Status::Ok();
  return InvalidArgument(std::to_string(epoch) + " is before the current epoch " +
                         std::to_string(*current));
}

Status CheckEpochBegins(const JobView& job, uint32_t epoch) {
  if (Status s = CheckSamplesWritten(job.samples != 0, NeedsSamples::kEpochMarker); !s.ok()) {
    return s;
  }
  if (Status s = CheckEpochInRun(job.epochs, epoch); !s.ok()) return s;
  return CheckEpochMarker(job.current, epoch);
}

Result<PositionVerdict> CheckPosition(std::optional<uint32_t> current, uint64_t order_size,
                                      uint32_t epoch, uint64_t position) {
  if (current && epoch < *current) return PositionVerdict::kLate;  // that epoch is over
  if (!current || epoch > *current) {
    return InvalidArgument("epoch " + std::to_string(epoch) +
                           " has not begun (write `epoch` first)");
  }
  if (order_size == 0) {
    return InvalidArgument("epoch " + std::to_string(epoch) + " has no declared order");
  }
  if (position > order_size) {
    return InvalidArgument("position " + std::to_string(position) + " is past the end of epoch " +
                           std::to_string(epoch) + "'s order (" + std::to_string(order_size) +
                           " samples)");
  }
  return PositionVerdict::kAccept;
}

}  // namespace epochfs::declarations
