#include "epochfs/spill/scheduler.h"

#include <string_view>
#include <unordered_set>

#include "epochfs/common/log.h"
#include "epochfs/spill/schedule.h"

namespace epochfs::spill {

SpillScheduler::SpillScheduler(SpillStore& store, SchedulerOptions options)
    : store_(store), opt_(options) {}

SpillScheduler::~SpillScheduler() { Stop(); }

void SpillScheduler::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void SpillScheduler::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  idle_cv_.notify_all();
}

bool SpillScheduler::Owns(uid_t owner, const std::string& rel) const {
  if (owner == 0) return true;
  Result<SpillAttr> a = store_.Stat(rel);
  return a.ok() && !a.value().is_dir && a.value().uid == owner;
}

void SpillScheduler::SetSchedule(const std::string& job, uid_t owner,
                                 std::vector<std::string> files) {
  {
    std::lock_guard lock(mu_);
    if (files.empty()) {
      jobs_.erase(job);
      return;
    }
    Job& j = jobs_[job];
    j.schedule = std::move(files);
    j.owner = owner;
    j.status = SpillJobStatus{};
    j.status.steps = j.schedule.size();
    ++j.generation;
    QueueLocked(job, j, -1);  // in line already: the start takes the old report's place
  }
  cv_.notify_one();
}

void SpillScheduler::QueueLocked(const std::string& job, Job& j, int64_t finished) {
  if (!j.pending.has_value()) {
    queue_.push_back(job);
  } else if (*j.pending >= 0 && finished >= 0) {
    ++j.status.coalesced;  // the waiting report is replaced: it counts as dealt with
    ++j.status.applied;
  }
  j.pending = finished;
}

Status SpillScheduler::Progress(const std::string& job, uint64_t step) {
  {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(job);
    if (it == jobs_.end()) return InvalidArgument("no spill_schedule declared");
    Job& j = it->second;
    if (step >= j.schedule.size()) {
      return InvalidArgument("step " + std::to_string(step) + " is outside the schedule (" +
                             std::to_string(j.schedule.size()) + " steps)");
    }
    j.status.progress = step;
    ++j.status.reports;
    QueueLocked(job, j, static_cast<int64_t>(step));
  }
  cv_.notify_one();
  return Status::Ok();
}

void SpillScheduler::DropJob(const std::string& job) {
  std::lock_guard lock(mu_);
  jobs_.erase(job);
}

Result<SpillJobStatus> SpillScheduler::JobStatus(const std::string& job) const {
  std::vector<std::string> files;
  SpillJobStatus st;
  uid_t owner = 0;
  {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(job);
    if (it == jobs_.end()) return NotFound("no spill schedule");
    st = it->second.status;
    files = it->second.schedule;
    owner = it->second.owner;
    st.owner = owner;
  }
  // Residency is asked of the store without our lock (it takes its own).
  // Each distinct path once, in schedule order: linear in the schedule.
  std::unordered_set<std::string_view> seen;
  seen.reserve(files.size());
  for (const std::string& f : files) {
    if (!seen.insert(f).second) continue;
    if (store_.Resident(f) && Owns(owner, f)) st.resident.push_back(f);
  }
  return st;
}

std::string SpillScheduler::ScheduleText(const std::string& job) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return "";
  std::string out;
  for (const std::string& f : it->second.schedule) out += f + "\n";
  return out;
}

void SpillScheduler::WaitIdle() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return stop_ || (queue_.empty() && !busy_); });
}

void SpillScheduler::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const std::string name = std::move(queue_.front());
    queue_.pop_front();
    auto it = jobs_.find(name);
    if (it == jobs_.end() || !it->second.pending.has_value()) {  // dropped meanwhile
      if (queue_.empty()) idle_cv_.notify_all();
      continue;
    }
    const int64_t finished = *it->second.pending;
    Report r{name, finished, it->second.generation, finished >= 0};
    it->second.pending.reset();
    busy_ = true;
    lock.unlock();
    Apply(r);
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

void SpillScheduler::Apply(const Report& r) {
  SchedulePlan plan;
  uid_t owner = 0;
  {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(r.job);
    if (it == jobs_.end() || it->second.generation != r.generation) return;  // stale
    plan = PlanAfterStep(it->second.schedule, r.finished, opt_.num_prefetch, opt_.num_writeout);
    owner = it->second.owner;
  }
  uint64_t wrote = 0, fetched = 0, missing = 0;
  // Write out first: it makes room in staging for what comes next.
  for (const std::string& f : plan.writeout) {
    if (!Owns(owner, f)) continue;  // another user's file: not ours to move
    const bool was_resident = store_.Resident(f);
    Status s = store_.WriteOut(f);  // also writes back a partly staged file
    if (s.ok()) {
      wrote += was_resident ? 1 : 0;
    } else if (s.code() != Code::kNotFound) {
      log::Warn("spill write-out of " + f + ": " + s.message());
    }
  }
  for (const std::string& f : plan.prefetch) {
    if (!Owns(owner, f)) {  // missing, or another user's: the same to this job
      ++missing;
      continue;
    }
    Status s = store_.Prefetch(f);
    if (s.ok()) {
      ++fetched;
    } else if (s.code() == Code::kNotFound) {
      ++missing;
    } else {
      log::Warn("spill prefetch of " + f + ": " + s.message());
    }
  }
  std::lock_guard lock(mu_);
  auto it = jobs_.find(r.job);
  if (it == jobs_.end() || it->second.generation != r.generation) return;
  it->second.status.applied += r.is_report ? 1 : 0;
  it->second.status.writeouts += wrote;
  it->second.status.prefetches += fetched;
  it->second.status.missing += missing;
}

}  // namespace epochfs::spill
