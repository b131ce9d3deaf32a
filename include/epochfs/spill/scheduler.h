// SpillScheduler: seed 001's memory-management thread for the spill tier.
//
// A job declares a spill schedule (the spill files of its steps in order of
// use, .epochfs/jobs/NAME/spill_schedule) and reports each finished step
// (.epochfs/jobs/NAME/progress). Reports are coalesced per job: only a job's
// latest report counts (a step reported while an earlier one waits replaces
// it), and the jobs with a report waiting are served in turn, one report
// each (a FIFO of job names, each in it at most once: bounded by the number
// of jobs, and one job's report loop cannot hold back another's). The
// scheduler thread applies PlanAfterStep (schedule.h): it prefetches the files of the next
// num_prefetch steps into the store's RAM staging and writes out of it the
// files that none of the next num_writeout steps needs. Declaring a schedule
// prefetches its first steps at once.
//
// Files named in a schedule need not exist yet (a step may create its file);
// a missing file is skipped and counted. Names are paths relative to
// .spill/, validated by the caller (control_parse).
//
// Thread safety: every public member is thread-safe. Start/Stop are called
// once each by the owner; Stop drains nothing (waiting reports are dropped).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/spill/spill_store.h"

namespace epochfs::spill {

struct SchedulerOptions {
  uint32_t num_prefetch = 2;
  uint32_t num_writeout = 2;
};

// What `status` shows of a job's spill schedule.
struct SpillJobStatus {
  size_t steps = 0;                   // schedule length
  std::optional<uint64_t> progress;   // last finished step reported
  uint64_t reports = 0;               // progress reports received
  uint64_t applied = 0;               // reports dealt with: applied, or replaced by a later one
  uint64_t coalesced = 0;             // of those, replaced before their turn
  uint64_t prefetches = 0;            // files loaded into staging
  uint64_t writeouts = 0;             // files written out of staging
  uint64_t missing = 0;               // scheduled files that did not exist when needed
  std::vector<std::string> resident;  // schedule files wholly in RAM staging now
  uid_t owner = 0;                    // the job's owner (SetSchedule)
};

class SpillScheduler {
 public:
  // REQUIRES: `store` outlives the scheduler.
  SpillScheduler(SpillStore& store, SchedulerOptions options);
  ~SpillScheduler();  // stops the thread
  SpillScheduler(const SpillScheduler&) = delete;
  SpillScheduler& operator=(const SpillScheduler&) = delete;

  void Start();
  void Stop();

  // Replaces `job`'s schedule (empty: forget it) and queues its first prefetch.
  // Only files that belong to `owner` are prefetched, written out or listed as
  // resident (owner 0: any file); the others count as missing, untouched, so
  // that a schedule cannot move or reveal another user's files.
  void SetSchedule(const std::string& job, uid_t owner, std::vector<std::string> files);
  // `job` finished step `step`. InvalidArgument without a schedule or for a
  // step outside it; nothing is queued then.
  Status Progress(const std::string& job, uint64_t step);
  // Forgets `job` (rmdir, reaped orphan).
  void DropJob(const std::string& job);
  // NotFound when `job` has no schedule.
  Result<SpillJobStatus> JobStatus(const std::string& job) const;
  // The schedule as declared (one name per line), "" when none.
  std::string ScheduleText(const std::string& job) const;
  // Blocks until every report queued so far has been applied (tests, status).
  void WaitIdle();

 private:
  struct Job {
    std::vector<std::string> schedule;
    uid_t owner = 0;
    SpillJobStatus status;
    uint64_t generation = 0;  // bumped by SetSchedule: stale reports are dropped
    // The report waiting for its turn: the step finished (-1: the schedule's
    // start, which is no progress report).
    std::optional<int64_t> pending;
  };
  // May the scheduler touch `rel` for a job of `owner`? (A store lookup.)
  bool Owns(uid_t owner, const std::string& rel) const;
  struct Report {
    std::string job;
    int64_t finished;
    uint64_t generation;
    bool is_report;  // a progress report (not the schedule's start)
  };

  // Makes `job` wait for its turn with `finished` (-1: the schedule's start),
  // replacing a report still waiting (guarded by mu_).
  void QueueLocked(const std::string& job, Job& j, int64_t finished);
  void Loop();
  void Apply(const Report& r);

  SpillStore& store_;
  const SchedulerOptions opt_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // reports queued, or stop
  std::condition_variable idle_cv_;  // a report was applied
  std::deque<std::string> queue_;    // guarded by mu_: jobs with a pending report, each once
  std::map<std::string, Job> jobs_;  // guarded by mu_
  bool busy_ = false;                // guarded by mu_: the thread is applying a report
  bool stop_ = false;                // guarded by mu_
  std::thread thread_;
};

}  // namespace epochfs::spill
