// SpillControl: where the control tree hands a job's spill files
// (.epochfs/jobs/NAME/spill_schedule and .../progress, epochfs-control(7)).
//
// Implemented by the daemon over the spill scheduler; absent (nullptr) when
// the mount has no spill area, and then the two files do not exist. Content
// is already parsed and the caller's right to write checked; a failed call
// changes nothing and its message goes to the job's last_error.
// Thread safety: implementations are thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs::control {

struct SpillStatus {
  size_t steps = 0;
  std::optional<uint64_t> progress;
  uint64_t reports = 0;
  uint64_t applied = 0;
  uint64_t prefetches = 0;
  uint64_t writeouts = 0;
  uint64_t missing = 0;
  std::vector<std::string> resident;  // the owner's schedule files wholly in RAM staging
};

class SpillControl {
 public:
  virtual ~SpillControl() = default;
  // `owner`: the job's owner. The schedule acts only on files that belong to
  // the owner (root's jobs: any file), and only those show in JobStatus.
  virtual void SetSchedule(const std::string& job, uid_t owner,
                           std::vector<std::string> files) = 0;
  virtual Status Progress(const std::string& job, uint64_t step) = 0;
  virtual std::string ScheduleText(const std::string& job) const = 0;
  virtual std::optional<SpillStatus> JobStatus(const std::string& job) const = 0;
  virtual void DropJob(const std::string& job) = 0;
};

}  // namespace epochfs::control
