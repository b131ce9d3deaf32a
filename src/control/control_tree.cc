#include "epochfs/control/control_tree.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "epochfs/common/log.h"
#include "epochfs/common/user_key.h"
#include "epochfs/control/control_parse.h"
#include "epochfs/control/metrics_text.h"

namespace epochfs::control {
namespace {

// A control path split into its parts: "jobs/NAME/order/K" → {"jobs", NAME, "order", K}.
std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

// The files of a job directory, in listing order.
constexpr const char* kJobFiles[] = {"config", "epoch", "order", "pids", "position", "samples",
                                      "status"};
// With a spill area, also these (listing order after kJobFiles).
constexpr const char* kSpillFiles[] = {"progress", "spill_schedule"};

// The clock the daemon gives JobRegistry::ReapOrphans (store::NowNs).
uint64_t SteadyNowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

bool IsSpillFile(const std::string& f) {
  for (const char* n : kSpillFiles) {
    if (f == n) return true;
  }
  return false;
}

}  // namespace

bool ControlTree::IsJobFile(const std::string& f) const {
  for (const char* n : kJobFiles) {
    if (f == n) return true;
  }
  return spill_ != nullptr && IsSpillFile(f);
}

std::string ControlTree::Resolve(const std::string& path, const Caller& who) const {
  if (who.uid == 0 || path.rfind("jobs/", 0) != 0 || path.find('/', 5) != std::string::npos) {
    return path;
  }
  return "jobs/" + UserKey(std::string_view(path).substr(5), who.uid);
}

Result<VNode> ControlTree::Stat(const std::string& path, const Caller& who) const {
  if (path.empty()) return VNode{true, false, 0, 0, 0};
  std::vector<std::string> p = Split(path);
  if (p.size() == 1) {
    if (p[0] == "version" || p[0] == "stats" || p[0] == "metrics") {
      return VNode{false, false, 0, 0, 0};
    }
    // Anyone's `epochfs warm` reports here; each write(2) one report.
    if (p[0] == "warm") return VNode{false, true, 0, 0, 0666, /*per_write=*/true};
    if (p[0] == "jobs") return VNode{true, false, 0, 0, 01777};
    return NotFound(path);
  }
  if (p[0] != "jobs") return NotFound(path);
  auto snap = registry_.Snapshot(p[1]);
  if (!snap.ok()) return NotFound(path);
  const uid_t owner = snap.value().owner;
  // Another user's job is not there for the caller; its directory and files
  // are the owner's alone (the kernel checks the modes: default_permissions).
  if (who.uid != 0 && who.uid != owner) return NotFound(path);
  if (p.size() == 2) return VNode{true, false, owner, 0, 0700};
  if (p.size() == 3) {
    if (!IsJobFile(p[2])) return NotFound(path);
    if (p[2] == "order") return VNode{true, false, owner, 0, 0700};
    if (p[2] == "status") return VNode{false, false, owner, 0, 0400};
    if (p[2] == "position") return VNode{false, true, owner, 0, 0600, /*per_write=*/true};
    return VNode{false, true, owner, 0, 0600};
  }
  if (p.size() == 4 && p[2] == "order" && ParseOrderFileName(p[3]).ok()) {
    return VNode{false, true, owner, 0, 0600};
  }
  return NotFound(path);
}

Result<std::vector<std::string>> ControlTree::List(const std::string& path,
                                                  const Caller& who) const {
  if (path.empty()) {
    return std::vector<std::string>{"jobs", "metrics", "stats", "version", "warm"};
  }
  if (path == "jobs") {
    std::vector<std::string> keys = registry_.JobNames(who.uid == 0 ? kAnyOwner : who.uid);
    for (std::string& k : keys) k = std::string(VisibleName(k, who.uid));
    return keys;
  }
  std::vector<std::string> p = Split(path);
  if (p[0] != "jobs" || p.size() > 3) return NotFound(path);
  auto snap = registry_.Snapshot(p[1]);
  if (!snap.ok()) return NotFound(path);
  if (who.uid != 0 && who.uid != snap.value().owner) return NotFound(path);
  if (p.size() == 2) {
    std::vector<std::string> files(std::begin(kJobFiles), std::end(kJobFiles));
    if (spill_ != nullptr) files.insert(files.end(), std::begin(kSpillFiles), std::end(kSpillFiles));
    std::sort(files.begin(), files.end());
    return files;
  }
  if (p[2] != "order") return NotFound(path);
  std::vector<std::string> names;
  for (uint32_t k : snap.value().declared_epochs) names.push_back(std::to_string(k));
  return names;
}

Result<std::string> ControlTree::Read(const std::string& path, const Caller& who) const {
  if (path == "version") {
    return std::string("epochfs ") + EPOCHFS_VERSION + "\nprotocol " +
           std::to_string(kProtocolVersion) + "\n";
  }
  if (path == "stats") return StatsFor(who) + "\n";
  if (path == "warm") return warm_.Json(who.uid).dump(2) + "\n";
  if (path == "metrics") {
    return PrometheusText(nlohmann::json::parse(StatsFor(who), nullptr, /*allow_exceptions=*/false));
  }
  std::vector<std::string> p = Split(path);
  if (p.size() < 3 || p[0] != "jobs") return NotFound(path);
  if (Status s = Stat(path, who).status(); !s.ok()) return s;
  if (p[2] == "status" && p.size() == 3) return StatusJson(p[1], who);
  auto snap = registry_.Snapshot(p[1]);
  if (!snap.ok()) return snap.status();
  const JobRecord& s = snap.value();
  if (p.size() == 3 && p[2] == "config") return s.config ? FormatJobConfig(*s.config) : "";
  if (p.size() == 3 && p[2] == "epoch") return s.epoch ? std::to_string(*s.epoch) + "\n" : "";
  if (p.size() == 3 && p[2] == "position") {
    return s.position ? std::to_string(s.position->epoch) + " " +
                            std::to_string(s.position->position) + "\n"
                      : std::string();
  }
  if (p.size() == 3 && p[2] == "pids") {
    std::string out;
    for (pid_t pid : s.pids) out += std::to_string(pid) + "\n";
    return out;
  }
  if (p.size() == 3 && spill_ != nullptr && p[2] == "spill_schedule") {
    return spill_->ScheduleText(p[1]);
  }
  if (p.size() == 3 && spill_ != nullptr && p[2] == "progress") {
    auto st = spill_->JobStatus(p[1]);
    return st && st->progress ? std::to_string(*st->progress) + "\n" : std::string();
  }
  // samples and order/K are write-only in substance: reading gives nothing
  // (a million-line sample list is not kept as text).
  if (Stat(path, who).ok()) return std::string();
  return NotFound(path);
}

std::string ControlTree::StatsFor(const Caller& who) const {
  std::string text = stats_();
  nlohmann::json warm = warm_.Json(who.uid);  // the caller's own warms (root: all)
  if (who.uid == 0 && warm.empty()) return text;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return text;
  if (!warm.empty()) j["warm"] = std::move(warm);
  if (who.uid == 0 || !j.contains("jobs") || !j["jobs"].is_array()) {
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  // The per-job rows of the caller's own jobs only; the aggregates stay.
  std::vector<std::string> own = registry_.JobNames(who.uid);
  nlohmann::json kept = nlohmann::json::array();
  for (auto& row : j["jobs"]) {
    if (row.contains("name") && row["name"].is_string() &&
        std::binary_search(own.begin(), own.end(), row["name"].get<std::string>())) {
      row["name"] = std::string(VisibleName(row["name"].get<std::string>(), who.uid));
      kept.push_back(std::move(row));
    }
  }
  j["jobs"] = std::move(kept);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status ControlTree::CheckWrite(const std::string& path, const Caller& who) {
  Status s = CheckWriteFile(path, who);
  if (!s.ok()) {
    log::Debug("open of " + QuoteForMessage(path) + " for writing by uid " +
               std::to_string(who.uid) + " refused: " + s.message());
  }
  return s;
}

Status ControlTree::CheckWriteFile(const std::string& path, const Caller& who) {
  auto vn = Stat(path);
  if (!vn.ok()) return vn.status();
  if (!vn.value().writable) return ReadOnly(path + " is read-only");
  if (path == "warm") return Status::Ok();
  std::vector<std::string> p = Split(path);
  return registry_.CheckWrite(p[1], who.uid, p.size() == 4 ? "order/" + p[3] : p[2]);
}

Status ControlTree::Write(const std::string& path, const std::string& content, const Caller& who) {
  Status s = WriteFile(path, content, who);
  if (!s.ok()) {
    refusals_.Info("write of " + QuoteForMessage(path) + " (" + std::to_string(content.size()) +
                   " bytes) by uid " + std::to_string(who.uid) + " refused: " + s.message());
  }
  return s;
}

Status ControlTree::WriteFile(const std::string& path, const std::string& content,
                              const Caller& who) {
  if (path == "warm") return warm_.Report(who, content);
  std::vector<std::string> p = Split(path);
  if (p.size() < 3 || p[0] != "jobs") return ReadOnly(path + " is read-only");
  const std::string& name = p[1];
  if (p.size() == 4 && p[2] == "order") {
    auto k = ParseOrderFileName(p[3]);
    if (!k.ok()) return k.status();
    return registry_.WriteOrder(name, who.uid, k.value(), content, who.pid);
  }
  if (p.size() != 3) return NotFound(path);
  if (p[2] == "config") return registry_.WriteConfig(name, who.uid, content, who.pid);
  if (p[2] == "samples") return registry_.WriteSamples(name, who.creds(), content, who.pid);
  if (p[2] == "epoch") return registry_.WriteEpoch(name, who.uid, content, who.pid);
  if (p[2] == "pids") return registry_.WritePids(name, who.uid, content, who.pid);
  if (p[2] == "position") return registry_.WritePosition(name, who.uid, content, who.pid);
  if (spill_ != nullptr && IsSpillFile(p[2])) return WriteSpillFile(name, p[2], content, who);
  return ReadOnly(path + " is read-only");
}

Status ControlTree::WriteSpillFile(const std::string& name, const std::string& file,
                                   const std::string& content, const Caller& who) {
  if (Status may = registry_.CheckWrite(name, who.uid, file); !may.ok()) return may;
  Status s = Status::Ok();
  if (file == "spill_schedule") {
    auto files = ParseSpillSchedule(content);
    auto snap = registry_.Snapshot(name);
    if (files.ok() && who.uid != 0 && files.value().size() > max_schedule_steps_) {
      s = InvalidArgument(std::to_string(files.value().size()) + " steps; at most " +
                          std::to_string(max_schedule_steps_) +
                          " per schedule (limits.spill_schedule_steps)");
    } else {
      if (files.ok() && snap.ok()) {
        spill_->SetSchedule(name, snap.value().owner, std::move(files).value());
      }
      s = files.status();
    }
  } else {
    auto step = ParseProgress(content);
    s = step.ok() ? spill_->Progress(name, step.value()) : step.status();
  }
  registry_.RecordError(name, file, s);
  return s;
}

Status ControlTree::Mkdir(const std::string& path, const Caller& who) {
  std::vector<std::string> p = Split(path);
  if (p.size() != 2 || p[0] != "jobs") return ReadOnly("only jobs/NAME can be created");
  // A user's key is NAME@UID (Resolve); root's is NAME: either way the name
  // part must be a name ('@' is not allowed in one).
  Status s = JobRegistry::ValidateName(VisibleName(p[1], who.uid));
  if (s.ok()) s = registry_.Register(p[1], who.creds(), who.pid).status();
  const std::string line = "job " + QuoteForMessage(p[1]) + " (mkdir by uid " +
                           std::to_string(who.uid) + ", pid " + std::to_string(who.pid) + "): " +
                           (s.ok() ? "registered" : "refused: " + s.message());
  s.ok() ? log::Info(line) : log::Debug(line);
  return s;
}

Status ControlTree::Rmdir(const std::string& path, const Caller& who) {
  std::vector<std::string> p = Split(path);
  if (p.size() != 2 || p[0] != "jobs") return ReadOnly("only jobs/NAME can be removed");
  Status s = registry_.Remove(p[1], who.uid);
  if (s.ok() && spill_ != nullptr) spill_->DropJob(p[1]);
  const std::string line = "job " + QuoteForMessage(p[1]) + " (rmdir by uid " +
                           std::to_string(who.uid) + "): " +
                           (s.ok() ? "ended, its cache released" : "refused: " + s.message());
  s.ok() ? log::Info(line) : log::Debug(line);
  return s;
}

Result<std::string> ControlTree::StatusJson(const std::string& name, const Caller& who) const {
  auto snap = registry_.Snapshot(name);
  if (!snap.ok()) return snap.status();
  const JobRecord& s = snap.value();
  nlohmann::json j;
  j["name"] = std::string(VisibleName(s.name, who.uid));
  j["id"] = s.id;
  j["owner"] = s.owner;
  j["state"] = JobPhaseName(s.state);
  j["epoch"] = s.epoch ? nlohmann::json(*s.epoch) : nlohmann::json(nullptr);
  j["samples"] = s.sample_count;
  j["declared_epochs"] = s.declared_epochs;
  j["accesses"] = s.accesses;
  j["pids"] = s.pids;
  j["position"] = s.position ? nlohmann::json{{"epoch", s.position->epoch},
                                              {"position", s.position->position}}
                             : nlohmann::json(nullptr);
  j["last_error"] = s.last_error;
  j["orphaned"] = s.orphaned_since_ns.has_value();
  if (s.orphaned_since_ns) {
    const uint64_t now = SteadyNowNs();
    j["orphaned_for_s"] =
        now > *s.orphaned_since_ns ? static_cast<double>(now - *s.orphaned_since_ns) / 1e9 : 0.0;
  }
  j["reattached"] = s.reattached;
  j["fresh_starts"] = s.fresh_starts;
  if (s.config) {
    j["batch_size"] = s.config->batch_size;
    j["epochs_total"] = s.config->epochs;
    j["loaders"] = s.config->loaders;
  }
  std::optional<JobFigures> f = policy_.Figures(s.id);
  if (f) {
    const cache::JobSnapshot& ps = f->policy;
    // Once the policy runs the job, its state is the finer one.
    if (ps.started) j["state"] = cache::JobStateName(ps.state);
    j["batch"] = ps.batch;
    // Reads by how they were served: hits at once, misses, and reads that
    // waited for LOWER although the policy counts them as hits (coalesced:
    // joined a load in flight; refills: read a handed-over object again).
    j["hits"] = ps.current.hits;
    j["misses"] = ps.current.misses;
    j["coalesced"] = ps.current.coalesced;
    j["refills"] = ps.current.refills;
    j["lower_wait_s"] = static_cast<double>(ps.current.lower_wait_ns) / 1e9;
    nlohmann::json epochs = nlohmann::json::array();
    for (const cache::EpochCounters& e : f->epochs) {
      epochs.push_back({{"epoch", e.epoch},
                        {"hits", e.hits},
                        {"misses", e.misses},
                        {"coalesced", e.coalesced},
                        {"refills", e.refills},
                        {"lower_wait_s", static_cast<double>(e.lower_wait_ns) / 1e9}});
    }
    j["epochs"] = epochs;
    j["unreadable_samples"] = f->unreadable;
    j["first_unreadable"] =
        f->unreadable != 0 ? nlohmann::json(f->first_unreadable) : nlohmann::json(nullptr);
    j["cur_bytes"] = ps.cur_bytes;
    j["next_bytes"] = ps.next_bytes;
    j["tail_bytes"] = ps.tail_bytes;
    j["granted_unused_bytes"] = ps.granted_unused_bytes;
    j["default_alloc_bytes"] = ps.default_alloc_bytes;
    j["reserved_bytes"] = ps.reserved_bytes;
    j["need_bytes"] = ps.need_bytes;
    // The cache that hides the job's I/O, estimated from its warm-up (null
    // until warm-up ends), with its inputs.
    j["cache_need_bytes"] = ps.need_measured ? nlohmann::json(ps.need_bytes) : nlohmann::json(nullptr);
    j["cache_need"] = {{"e", ps.e},
                       {"batches", ps.need_batches},
                       {"mean_sample_bytes", ps.need_sample_bytes},
                       {"measured", ps.need_measured}};
    j["rank"] = ps.rank;
    j["lambda"] = ps.lambda;
    j["h"] = ps.h;
    j["e"] = ps.e;
    j["epoch_time_ns"] = ps.epoch_time_ns;
    j["load_ns_per_sample"] = ps.load_ns_per_sample;
    j["compute_ns_per_batch"] = ps.compute_ns_per_batch;
    j["mean_sample_bytes"] = ps.mean_sample_bytes;
    j["hit_worth"] = ps.hit_worth;
    if (s.orphaned_since_ns) j["state"] = "orphaned";
  } else {
    j["batch"] = 0;
    j["hits"] = 0;
    j["misses"] = 0;
    j["coalesced"] = 0;
    j["refills"] = 0;
    j["epochs"] = nlohmann::json::array();
    j["unreadable_samples"] = 0;
    j["first_unreadable"] = nullptr;
    for (const char* k : {"cur_bytes", "next_bytes", "tail_bytes", "granted_unused_bytes"}) j[k] = 0;
    if (s.orphaned_since_ns) j["state"] = "orphaned";
  }
  if (spill_ != nullptr) {
    if (std::optional<SpillStatus> sp = spill_->JobStatus(name)) {
      j["spill"] = {{"steps", sp->steps},
                    {"progress", sp->progress ? nlohmann::json(*sp->progress) : nlohmann::json(nullptr)},
                    {"reports", sp->reports},
                    {"applied", sp->applied},
                    {"prefetches", sp->prefetches},
                    {"writeouts", sp->writeouts},
                    {"missing", sp->missing},
                    {"resident", sp->resident}};
    }
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace epochfs::control
