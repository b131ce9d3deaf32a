#include "job_sink.h"

#include <sys/stat.h>

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "epochfs/common/log.h"
#include "epochfs/store/dir_reach.h"

namespace epochfs {
namespace {

// Adapts a Status-returning policy call to CacheFront::WithPolicy.
Result<cache::Decision> NoDecision(Status s) {
  if (!s.ok()) return s;
  return cache::Decision{};
}

std::optional<cache::JobSnapshot> FindJob(const cache::Policy& p, cache::JobId id) {
  for (cache::JobSnapshot& s : p.Jobs()) {
    if (s.id == id) return std::move(s);
  }
  return std::nullopt;
}

}  // namespace

Result<control::ResolvedSamples> PolicyJobSink::ResolveSamples(const std::string& root,
                                                               const control::PathList& paths,
                                                               const Credentials& owner) {
  // Objects are named by path (store::ObjectIdOf): no file is looked at here,
  // each is checked at its first load (a missing one fails that read, and a
  // prefetch that finds it missing says so in the job's status; a prefetch
  // loads only what the owner may read). Only the distinct directories are,
  // as the owner reaches them (store::ReachDirs): a wrong root or class
  // directory is a clear error now rather than a run of failed reads, and a
  // directory the owner may not reach fails exactly as a missing one.
  control::ResolvedSamples out;
  out.refs.reserve(paths.size());
  std::vector<std::string> dirs;
  std::vector<size_t> dir_line;  // the first line naming each directory
  std::vector<uint32_t> dir_of;  // each line's directory, in `dirs`
  dir_of.reserve(paths.size());
  std::unordered_map<std::string, uint32_t> seen;
  std::string rel = root.empty() ? std::string() : root + "/";
  const size_t prefix = rel.size();
  std::string last_dir = "\n";  // no directory is named so
  uint32_t last = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    rel.resize(prefix);
    rel += paths[i];
    out.refs.push_back({store::ObjectIdOf(rel), 0});
    const size_t slash = rel.rfind('/');
    const std::string_view dir =
        slash == std::string::npos ? std::string_view() : std::string_view(rel).substr(0, slash);
    if (dir != last_dir) {  // lists are mostly grouped by directory
      last_dir.assign(dir);
      auto [it, added] = seen.emplace(last_dir, static_cast<uint32_t>(dirs.size()));
      if (added) {
        dirs.push_back(last_dir);
        dir_line.push_back(i);
      }
      last = it->second;
    }
    dir_of.push_back(last);
  }
  Result<std::vector<store::DirReach>> reach = store::ReachDirs(lower_, dirs, owner);
  if (!reach.ok()) return InvalidArgument(reach.status().message());
  bool any_hidden = false;
  for (size_t d = 0; d < dirs.size(); ++d) {
    const store::DirReach& r = reach.value()[d];
    const size_t i = dir_line[d];
    const std::string where = "line " + std::to_string(i + 1) + ": " + std::string(paths[i]) +
                              ": directory " +
                              (dirs[d].empty() ? std::string(".") : dirs[d]);
    if (!r.st.ok()) return InvalidArgument(where + ": " + r.st.status().message());
    if (!S_ISDIR(r.st.value().st_mode)) return InvalidArgument(where + ": not a directory");
    any_hidden = any_hidden || !r.searchable;
  }
  if (!any_hidden) return out;
  // In a directory the owner sees but may not search: the file is not there
  // for them. Its object is one no file has (its key starts with a NUL,
  // which no path and no block key does), so that nothing another user
  // caches under the real name shows in this job's figures; it is never
  // loaded (SampleFileOf says it is hidden).
  out.hidden.assign(paths.size(), false);
  for (size_t i = 0; i < paths.size(); ++i) {
    if (reach.value()[dir_of[i]].searchable) continue;
    out.hidden[i] = true;
    rel.resize(prefix);
    rel += paths[i];
    out.refs[i].object = store::ObjectIdOf(std::string(1, '\0') + std::to_string(owner.uid) + '\0' + rel);
  }
  return out;
}

Status PolicyJobSink::OnConfigured(const cache::JobSpec& spec, const control::JobConfig& config) {
  cache::JobSpec s = spec;
  // A reported compute time replaces the measured one; the policy reads 0 as
  // "measure it", so a reported 0 becomes 1 ns (no compute to hide loads behind).
  if (config.compute_ms) {
    s.compute_ns_per_batch = std::max<uint64_t>(1, static_cast<uint64_t>(*config.compute_ms * 1e6));
  }
  return cache_.WithPolicy([&](cache::Policy& p) { return NoDecision(p.AddJob(s)); });
}

Status PolicyJobSink::OnSamples(control::JobId job, std::vector<cache::SampleRef> samples,
                                std::shared_ptr<const control::SampleList> list) {
  Status s = cache_.WithPolicy(
      [&](cache::Policy& p) { return NoDecision(p.SetSamples(job, std::move(samples))); });
  if (!s.ok()) return s;
  {
    std::lock_guard lock(lists_mu_);
    lists_[job] = std::move(list);
  }
  if (on_samples_) on_samples_();
  return s;
}

std::optional<SampleFile> PolicyJobSink::SampleFileOf(cache::JobId job, uint32_t sample) const {
  std::shared_ptr<const control::SampleList> list;
  {
    std::lock_guard lock(lists_mu_);
    auto it = lists_.find(job);
    if (it == lists_.end()) return std::nullopt;
    list = it->second;
  }
  if (sample >= list->paths.size()) return std::nullopt;
  return SampleFile{list->Path(sample), list->Hidden(sample), list->owner};
}

Status PolicyJobSink::OnOrder(control::JobId job, uint32_t epoch, std::vector<uint32_t> order) {
  return cache_.WithPolicy(
      [&](cache::Policy& p) { return NoDecision(p.SetOrder(job, epoch, std::move(order))); });
}

void PolicyJobSink::OnEpochBegin(control::JobId job, uint32_t epoch) {
  std::optional<cache::EpochCounters> finished;
  Status s = cache_.WithPolicy([&](cache::Policy& p) -> Result<cache::Decision> {
    auto before = FindJob(p, job);
    if (before && before->started && before->epoch != epoch) finished = before->current;
    Result<cache::Decision> r = p.BeginEpoch(job, epoch, store::NowNs());
    // The epoch's final counters, as BeginEpoch closed it (the future policy
    // under fuse.no_open counts the reads the job made unseen then).
    auto after = r.ok() && finished ? FindJob(p, job) : std::nullopt;
    if (after && after->previous.epoch == finished->epoch) finished = after->previous;
    return r;
  });
  if (!s.ok()) {
    log::Warn("job " + std::to_string(job) + ": epoch " + std::to_string(epoch) + ": " +
              s.message());
    return;
  }
  if (finished) {
    std::lock_guard lock(history_mu_);
    history_[job].push_back(*finished);
  }
}

void PolicyJobSink::OnPosition(control::JobId job, uint32_t epoch, uint64_t position) {
  (void)cache_.WithPolicy([&](cache::Policy& p) -> Result<cache::Decision> {
    return p.Progress(job, epoch, position, store::NowNs());
  });
}

void PolicyJobSink::OnEpochRestart(control::JobId job) {
  Status s = cache_.WithPolicy(
      [&](cache::Policy& p) { return NoDecision(p.RestartEpoch(job, store::NowNs())); });
  if (!s.ok() && s.code() != Code::kNotFound) {
    log::Warn("job " + std::to_string(job) + ": epoch restart: " + s.message());
  }
  log::Info("job " + std::to_string(job) +
            ": re-attached; it reads its current epoch again, with the cache it kept");
}

void PolicyJobSink::OnJobEnd(control::JobId job) {
  Status s = cache_.WithPolicy([&](cache::Policy& p) { return p.EndJob(job); });
  if (!s.ok() && s.code() != Code::kNotFound) log::Warn("job end: " + s.message());
  {
    std::lock_guard lock(lists_mu_);
    lists_.erase(job);
  }
  std::lock_guard lock(history_mu_);
  history_.erase(job);
  unreadable_.erase(job);
}

void PolicyJobSink::SampleUnreadable(cache::JobId job, uint32_t sample, const std::string& rel,
                                     const Status& why) {
  log::Warn("job " + std::to_string(job) + ": sample " + std::to_string(sample) + " (" + rel +
            "): " + why.message());
  std::lock_guard lock(history_mu_);
  Unreadable& u = unreadable_[job];
  if (u.count++ == 0) u.first = "sample " + std::to_string(sample) + ": " + why.message();
}

std::optional<control::JobFigures> PolicyJobSink::Figures(cache::JobId id) const {
  std::optional<cache::JobSnapshot> snap;
  cache_.ReadPolicy([&](const cache::Policy& p) { snap = FindJob(p, id); });
  if (!snap) return std::nullopt;
  control::JobFigures f;
  f.policy = std::move(*snap);
  {
    std::lock_guard lock(history_mu_);
    auto it = history_.find(id);
    if (it != history_.end()) f.epochs = it->second;
    if (auto u = unreadable_.find(id); u != unreadable_.end()) {
      f.unreadable = u->second.count;
      f.first_unreadable = u->second.first;
    }
  }
  if (f.policy.started) f.epochs.push_back(f.policy.current);
  return f;
}

fs::Attributor::Attribution RegistryAttributor::Attribute(pid_t pid, uid_t uid,
                                                         cache::ObjectId object) {
  if (registry_.empty()) return {};
  control::AccessInfo info = registry_.OnAccess(pid, object, uid);
  return {info.job, info.sample};
}

}  // namespace epochfs
