// SpillArea: the daemon's spill tier — the io_uring store behind .spill/ and
// seed 001's scheduler — and the control tree's view of it (SpillControl).
//
// Two steps, because the daemon forks after mounting and threads do not
// survive a fork: Check() opens the store once before the mount, so that a
// bad spill.path fails the mount with a clear line; Open() opens it for good
// and starts the scheduler after daemonizing, before the first request.
// Until Open() succeeds the SpillControl calls refuse (never reached in
// practice: no request is served before it).
// Thread safety: Check/Open/Close from the daemon's main thread; the
// SpillControl members are thread-safe.
#pragma once

#include <memory>
#include <string>

#include "epochfs/config/config.h"
#include "epochfs/control/spill_control.h"
#include "epochfs/spill/scheduler.h"
#include "epochfs/spill/spill_store.h"

namespace epochfs {

class SpillArea final : public control::SpillControl {
 public:
  // `per_user`: limits.spill_bytes_per_user; a percentage is of spill.max_bytes,
  // or of the size of the filesystem holding spill.path when there is no quota.
  // `entries`: limits.spill_entries_per_user.
  SpillArea(const Config::Spill& cfg, MemoryAmount per_user, uint32_t entries);
  ~SpillArea() override;

  Status Check();
  Status Open();
  // Stops the scheduler, writes everything back, closes the store.
  void Close();
  spill::SpillStore* store() const { return store_.get(); }

  // control::SpillControl
  void SetSchedule(const std::string& job, uid_t owner, std::vector<std::string> files) override;
  Status Progress(const std::string& job, uint64_t step) override;
  std::string ScheduleText(const std::string& job) const override;
  std::optional<control::SpillStatus> JobStatus(const std::string& job) const override;
  void DropJob(const std::string& job) override;

 private:
  spill::SpillOptions Options() const;

  const Config::Spill cfg_;
  const MemoryAmount per_user_;
  const uint32_t entries_;
  std::unique_ptr<spill::SpillStore> store_;
  std::unique_ptr<spill::SpillScheduler> scheduler_;
};

}  // namespace epochfs
