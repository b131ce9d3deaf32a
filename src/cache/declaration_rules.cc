#include "epochfs/cache/declaration_rules.h"

#include <limits>
#include <string>

namespace epochfs::cache {

Status CheckNewJob(const JobSpec& spec, bool taken) {
  if (spec.id == kNoJob) return InvalidArgument("job id 0 is reserved");
  if (spec.batch_size == 0) return InvalidArgument("batch_size must be at least 1");
  if (taken) {
    return Status(Code::kExists, "job id " + std::to_string(spec.id) + " is already registered");
  }
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

Status CheckOrder(const OrderContext& job, uint32_t epoch, const std::vector<uint32_t>& order,
                  std::vector<int32_t>* pos) {
  const std::string what = "order " + std::to_string(epoch) + ": ";
  if (job.samples == 0) return InvalidArgument(what + "the sample list must be written first");
  if (job.epochs > 0 && epoch >= job.epochs) {
    return InvalidArgument(what + "the job has " + std::to_string(job.epochs) + " epochs (0.." +
                           std::to_string(job.epochs - 1) + ")");
  }
  if (job.started && epoch < job.current) {
    return InvalidArgument(what + "epoch " + std::to_string(epoch) + " is over (current epoch " +
                           std::to_string(job.current) + ")");
  }
  if (order.empty()) return InvalidArgument(what + "the order is empty");
  std::vector<int32_t> inverse(job.samples, -1);
  for (size_t p = 0; p < order.size(); ++p) {
    const uint32_t x = order[p];
    if (x >= job.samples) {
      return InvalidArgument(what + "index " + std::to_string(x) + " at position " +
                             std::to_string(p) + " is out of range (" +
                             std::to_string(job.samples) + " samples)");
    }
    if (inverse[x] != -1) {
      return InvalidArgument(what + "index " + std::to_string(x) + " appears twice (positions " +
                             std::to_string(static_cast<uint64_t>(inverse[x])) + " and " +
                             std::to_string(p) + ")");
    }
    inverse[x] = static_cast<int32_t>(p);
  }
  if (pos != nullptr) *pos = std::move(inverse);
  return Status::Ok();
}

}  // namespace epochfs::cache
