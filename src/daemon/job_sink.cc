#include "job_sink.h"

#include <sys/stat.h>

#include <algorithm>

#include "epochfs/common/log.h"

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

Result<std::vector<cache::SampleRef>> PolicyJobSink::ResolveSamples(
    const std::string& root, const std::vector<std::string>& paths) {
  std::vector<cache::SampleRef> out;
  out.reserve(paths.size());
  std::vector<std::string> rels;
  rels.reserve(paths.size());
  for (const std::string& p : paths) rels.push_back(root.empty() ? p : root + "/" + p);
  std::vector<Result<struct stat>> stats = lower_.StatMany(rels);
  for (size_t i = 0; i < paths.size(); ++i) {
    const Result<struct stat>& st = stats[i];
    const std::string where = "line " + std::to_string(i + 1) + ": " + paths[i];
    if (!st.ok()) return InvalidArgument(where + ": " + st.status().message());
    if (!S_ISREG(st.value().st_mode)) return InvalidArgument(where + ": not a regular file");
    out.push_back({store::ObjectIdOf(st.value()), static_cast<uint64_t>(st.value().st_size)});
  }
  if (on_path_) {
    for (size_t i = 0; i < out.size(); ++i) on_path_(out[i].object, rels[i]);
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

Status PolicyJobSink::OnSamples(control::JobId job, std::vector<cache::SampleRef> samples) {
  return cache_.WithPolicy(
      [&](cache::Policy& p) { return NoDecision(p.SetSamples(job, std::move(samples))); });
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
    return p.BeginEpoch(job, epoch, store::NowNs());
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
  std::lock_guard lock(history_mu_);
  history_.erase(job);
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
