#include "spill_area.h"

#include <sys/statvfs.h>

#include <filesystem>

#include "epochfs/common/log.h"
#include "epochfs/common/user_key.h"

namespace epochfs {
namespace {

// Size of the filesystem holding `dir` (or its nearest existing ancestor:
// the store creates `dir`); 0 if unknown.
uint64_t FilesystemBytes(const std::string& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
  for (;;) {
    struct statvfs v {};
    if (::statvfs(p.c_str(), &v) == 0) return uint64_t{v.f_blocks} * v.f_frsize;
    if (!p.has_relative_path()) return 0;
    p = p.parent_path();
  }
}

}  // namespace

SpillArea::SpillArea(const Config::Spill& cfg, MemoryAmount per_user, uint32_t entries)
    : cfg_(cfg), per_user_(per_user), entries_(entries) {}

SpillArea::~SpillArea() { Close(); }

spill::SpillOptions SpillArea::Options() const {
  spill::SpillOptions o;
  o.dir = cfg_.path;
  o.max_bytes = cfg_.max_bytes;
  const uint64_t area = cfg_.max_bytes != 0 ? cfg_.max_bytes : FilesystemBytes(cfg_.path);
  o.max_bytes_per_user = per_user_.Of(area);
  if (per_user_.is_percent && o.max_bytes_per_user == 0) o.max_bytes_per_user = 1;  // unknown size: refuse
  // Users together leave one user's share to root (the daemon's own jobs):
  // however many users fill the area, root's writes are refused only for
  // root's own bytes.
  if (o.max_bytes_per_user != 0 && area > o.max_bytes_per_user) {
    o.max_bytes_all_users = area - o.max_bytes_per_user;
  }
  o.max_entries_per_user = entries_;
  o.compress = cfg_.compress;
  o.staging_bytes = cfg_.staging;
  o.queue_depth = cfg_.queue_depth;
  return o;
}

Status SpillArea::Check() {
  auto s = spill::SpillStore::Open(Options());
  if (!s.ok()) return Status(s.status().code(), "spill.path " + cfg_.path + ": " + s.status().message());
  return Status::Ok();
}

Status SpillArea::Open() {
  auto s = spill::SpillStore::Open(Options());
  if (!s.ok()) return Status(s.status().code(), "spill.path " + cfg_.path + ": " + s.status().message());
  store_ = std::move(s).value();
  scheduler_ = std::make_unique<spill::SpillScheduler>(
      *store_, spill::SchedulerOptions{cfg_.num_prefetch, cfg_.num_writeout});
  scheduler_->Start();
  return Status::Ok();
}

void SpillArea::Close() {
  if (scheduler_) scheduler_->Stop();
  scheduler_.reset();
  if (store_) {
    if (Status s = store_->SyncAll(); !s.ok()) log::Error("spill write-back at exit: " + s.message());
  }
  store_.reset();
}

// A schedule names files as its owner sees them under .spill/; the store
// keys the top of the area per user (common/user_key.h).
void SpillArea::SetSchedule(const std::string& job, uid_t owner, std::vector<std::string> files) {
  if (!scheduler_) return;
  for (std::string& f : files) f = UserKeyPath(f, owner);
  scheduler_->SetSchedule(job, owner, std::move(files));
}

Status SpillArea::Progress(const std::string& job, uint64_t step) {
  if (!scheduler_) return Status(Code::kUnsupported, "the spill area is not open");
  return scheduler_->Progress(job, step);
}

std::string SpillArea::ScheduleText(const std::string& job) const {
  if (!scheduler_) return std::string();
  auto st = scheduler_->JobStatus(job);
  const std::string text = scheduler_->ScheduleText(job);
  if (!st.ok()) return text;
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    out += VisiblePath(std::string_view(text).substr(at, nl - at), st.value().owner);
    out += '\n';
    at = nl + 1;
  }
  return out;
}

std::optional<control::SpillStatus> SpillArea::JobStatus(const std::string& job) const {
  if (!scheduler_) return std::nullopt;
  auto st = scheduler_->JobStatus(job);
  if (!st.ok()) return std::nullopt;
  const spill::SpillJobStatus& s = st.value();
  control::SpillStatus out;
  out.steps = s.steps;
  out.progress = s.progress;
  out.reports = s.reports;
  out.applied = s.applied;
  out.prefetches = s.prefetches;
  out.writeouts = s.writeouts;
  out.missing = s.missing;
  for (const std::string& f : s.resident) out.resident.push_back(VisiblePath(f, s.owner));
  return out;
}

void SpillArea::DropJob(const std::string& job) {
  if (scheduler_) scheduler_->DropJob(job);
}

}  // namespace epochfs
