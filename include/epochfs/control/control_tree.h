// ControlTree: the `.epochfs/` tree of a mount (protocol v1, epochfs-control(7)).
//
//   version                 r   "epochfs X.Y.Z\nprotocol 1\n"
//   stats                   r   JSON snapshot of the daemon (from a callback)
//   metrics                 r   the same as Prometheus text (metrics_text.h)
//   warm                    rw  `epochfs warm` progress reports, one per write(2), by
//                               anyone (warm_progress.h); read: the caller's rows
//   jobs/                   mkdir NAME registers a job, rmdir NAME ends it;
//                           names are per user (common/user_key.h)
//   jobs/NAME/config        w   TOML: batch_size, epochs, root, loaders, compute_ms
//   jobs/NAME/samples       w   one path per line, relative to root
//   jobs/NAME/order/K       w   epoch K's order (any valid K may be opened)
//   jobs/NAME/epoch         rw  "K": the job starts epoch K now
//   jobs/NAME/pids          rw  processes attributed to the job
//   jobs/NAME/position      rw  "K P": the job has handed out P samples of epoch K;
//                               taken at each write(2) (VNode::per_write)
//   jobs/NAME/status        r   JSON: registry state + the policy's figures
//   jobs/NAME/spill_schedule rw spill files in order of use (with a spill area)
//   jobs/NAME/progress      rw  index of the last finished spill step (idem)
//
// Modes: jobs/ is 1777 (anyone may register, only the owner may remove); a
// job's directory and files belong to its owner, and writable files are 0666
// so that a write by another user reaches the registry, which refuses it with
// NotPermitted (EPERM) and records why in the job's status.
// Thread safety: thread-safe (the registry and the callbacks are).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "epochfs/common/log_limit.h"
#include "epochfs/control/control_plane.h"
#include "epochfs/control/job_registry.h"
#include "epochfs/control/policy_view.h"
#include "epochfs/control/spill_control.h"
#include "epochfs/control/warm_progress.h"

namespace epochfs::control {

inline constexpr int kProtocolVersion = 1;

class ControlTree : public ControlPlane {
 public:
  using StatsFn = std::function<std::string()>;
  // REQUIRES: `registry`, `policy` and `spill` (when not null: the mount has
  // a spill area) outlive the tree.
  // A spill_schedule written by a user other than root holds at most
  // `max_schedule_steps` steps (limits.spill_schedule_steps; EINVAL past it).
  ControlTree(JobRegistry& registry, const PolicyView& policy, StatsFn stats,
              SpillControl* spill = nullptr, size_t max_schedule_steps = SIZE_MAX)
      : registry_(registry),
        policy_(policy),
        stats_(std::move(stats)),
        spill_(spill),
        max_schedule_steps_(max_schedule_steps) {}

  // jobs/NAME of a user other than root is jobs/NAME@UID (common/user_key.h).
  std::string Resolve(const std::string& path, const Caller& who) const override;
  Result<VNode> Stat(const std::string& path, const Caller& who = {}) const override;
  Result<std::vector<std::string>> List(const std::string& path,
                                        const Caller& who = {}) const override;
  Result<std::string> Read(const std::string& path, const Caller& who = {}) const override;
  Status CheckWrite(const std::string& path, const Caller& who) override;
  Status Write(const std::string& path, const std::string& content, const Caller& who) override;
  Status Mkdir(const std::string& path, const Caller& who) override;
  Status Rmdir(const std::string& path, const Caller& who) override;

  // The status JSON of the job of key `name`, as `who` sees it (its "name"
  // is the one `who` uses).
  Result<std::string> StatusJson(const std::string& name, const Caller& who = {}) const;

 private:
  bool IsJobFile(const std::string& f) const;
  // The stats JSON as `who` may see it: only their own jobs' and warms' rows
  // (root: all).
  std::string StatsFor(const Caller& who) const;
  // Write and CheckWrite without the log line of a refusal.
  Status WriteFile(const std::string& path, const std::string& content, const Caller& who);
  Status CheckWriteFile(const std::string& path, const Caller& who);
  Status WriteSpillFile(const std::string& name, const std::string& file,
                        const std::string& content, const Caller& who);

  JobRegistry& registry_;
  const PolicyView& policy_;
  // Refused control writes are logged (info) with their reason, 20 per 10 s
  // at most: any user can cause them.
  log::LogLimit refusals_{20, 10'000'000'000ULL, [] {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }};
  StatsFn stats_;
  SpillControl* spill_;
  const size_t max_schedule_steps_;
  WarmProgress warm_;  // `epochfs warm` reports (the file `warm`)
};

}  // namespace epochfs::control
