// KnownLower (known_lower.h).
#include "epochfs/store/known_lower.h"

#include <mutex>

#include "epochfs/store/object.h"

namespace epochfs::store {

KnownLower::KnownLower(const Lower& lower, KnownLowerOptions options)
    : lower_(lower), opt_(options) {}

KnownLower::Attr KnownLower::Pack(const struct stat& st, int64_t now_ms) {
  Attr a;
  a.size = static_cast<uint64_t>(st.st_size);
  a.blocks = static_cast<uint64_t>(st.st_blocks);
  a.ino = st.st_ino;
  a.atime_s = st.st_atim.tv_sec;
  a.mtime_s = st.st_mtim.tv_sec;
  a.ctime_s = st.st_ctim.tv_sec;
  a.atime_ns = static_cast<uint32_t>(st.st_atim.tv_nsec);
  a.mtime_ns = static_cast<uint32_t>(st.st_mtim.tv_nsec);
  a.ctime_ns = static_cast<uint32_t>(st.st_ctim.tv_nsec);
  a.mode = st.st_mode;
  a.uid = st.st_uid;
  a.gid = st.st_gid;
  a.nlink = static_cast<uint32_t>(st.st_nlink);
  a.checked_ms = now_ms;
  return a;
}

struct stat KnownLower::Unpack(const Attr& a) {
  struct stat st {};
  st.st_size = static_cast<off_t>(a.size);
  st.st_blocks = static_cast<blkcnt_t>(a.blocks);
  st.st_blksize = 4096;
  st.st_ino = a.ino;
  st.st_atim = {a.atime_s, a.atime_ns};
  st.st_mtim = {a.mtime_s, a.mtime_ns};
  st.st_ctim = {a.ctime_s, a.ctime_ns};
  st.st_mode = a.mode;
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_nlink = a.nlink;
  return st;
}

int64_t KnownLower::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool KnownLower::Young(const Attr& a, int64_t now_ms) const {
  return opt_.max_age == std::chrono::milliseconds::max() ||
         now_ms - a.checked_ms < opt_.max_age.count();
}

void KnownLower::Remember(const std::string& rel, const struct stat& st, int64_t now_ms) const {
  std::unique_lock lk(mu_);
  const uint64_t key = ObjectIdOf(rel);
  auto it = attrs_.find(key);
  if (it != attrs_.end()) {
    it->second = Pack(st, now_ms);
  } else if (attrs_.size() + names_ < opt_.max_entries) {
    attrs_.emplace(key, Pack(st, now_ms));
  } else {
    full_.fetch_add(1, std::memory_order_relaxed);
  }
}

void KnownLower::Learn(const std::string& rel, const struct stat& st) const {
  if (opt_.remember) Remember(rel, st, NowMs());
}

void KnownLower::Forget(const std::string& rel) const {
  std::unique_lock lk(mu_);
  attrs_.erase(ObjectIdOf(rel));
}

void KnownLower::Ahead(const std::string& rel) const {
  if (!opt_.remember) return;
  bool young = false;
  {
    std::shared_lock lk(mu_);
    auto it = attrs_.find(ObjectIdOf(rel));
    young = it != attrs_.end() && Young(it->second, NowMs());
  }
  if (!young) (void)Stat(rel, LowerCall::kLookup);
  ahead_.fetch_add(1, std::memory_order_relaxed);
}

Result<struct stat> KnownLower::Stat(const std::string& rel, LowerCall kind,
                                     double* age_s) const {
  if (age_s != nullptr) *age_s = 0;
  if (!opt_.remember) return lower_.Stat(rel, kind);
  const int64_t now = NowMs();
  const auto aged = [&](const Attr& a) {
    if (age_s != nullptr && opt_.max_age != std::chrono::milliseconds::max()) {
      *age_s = static_cast<double>(now - a.checked_ms) / 1000.0;
    }
    return Unpack(a);
  };
  std::optional<Attr> known;
  {
    std::shared_lock lk(mu_);
    if (auto it = attrs_.find(ObjectIdOf(rel)); it != attrs_.end()) known = it->second;
  }
  if (!known) {
    // A directory a load opened (to hold it): its open's lookup told us.
    if (std::optional<HeldDirs::DirAttrs> d = lower_.HeldDirAttrs(rel)) {
      const int64_t at = std::chrono::duration_cast<std::chrono::milliseconds>(
                             d->at.time_since_epoch()).count();
      Remember(rel, d->st, at);
      known = Pack(d->st, at);
    }
  }
  if (known && Young(*known, now)) {
    answered_.fetch_add(1, std::memory_order_relaxed);
    return aged(*known);
  }
  if (known && lower_.health().down()) {
    answered_.fetch_add(1, std::memory_order_relaxed);
    last_known_.fetch_add(1, std::memory_order_relaxed);
    return aged(*known);
  }
  Result<struct stat> fresh = Status::Ok();
  if (known) {
    // The last known attributes answer a call given up on.
    WorkerOnlyScope on_a_worker(opt_.recheck_grace);
    fresh = lower_.Stat(rel, kind);
  } else {
    fresh = lower_.Stat(rel, kind);
  }
  if (fresh.ok()) {
    Remember(rel, fresh.value(), now);
    return fresh;
  }
  const Code code = fresh.status().code();
  if (code == Code::kNotFound) {
    Forget(rel);
    return fresh;
  }
  if (known && (code == Code::kTimedOut || code == Code::kIoError || code == Code::kInterrupted)) {
    answered_.fetch_add(1, std::memory_order_relaxed);
    last_known_.fetch_add(1, std::memory_order_relaxed);
    return aged(*known);
  }
  return fresh;
}

Result<std::vector<DirEntry>> KnownLower::List(const std::string& rel) const {
  if (!opt_.remember) return lower_.List(rel);
  const uint64_t key = ObjectIdOf(rel);
  {
    std::shared_lock lk(mu_);
    if (auto it = lists_.find(key); it != lists_.end()) {
      answered_.fetch_add(1, std::memory_order_relaxed);
      return it->second;
    }
  }
  auto got = lower_.List(rel);
  if (!got.ok()) return got;
  std::unique_lock lk(mu_);
  if (lists_.count(key) == 0) {
    if (attrs_.size() + names_ + got.value().size() < opt_.max_entries) {
      names_ += got.value().size();
      lists_.emplace(key, got.value());
    } else {
      full_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return got;
}

Result<std::vector<std::optional<struct stat>>> KnownLower::StatEntries(
    const std::string& rel, const std::vector<std::string>& names) const {
  if (!opt_.remember) return lower_.StatEntries(rel, names);
  const int64_t now = NowMs();
  // Answered from memory only when what is remembered stays true: the
  // kernel keeps a readdirplus reply's attributes for a whole timeout.
  const bool forever = opt_.max_age == std::chrono::milliseconds::max();
  const auto path_of = [&rel](const std::string& name) {
    return rel.empty() ? name : rel + "/" + name;
  };
  std::vector<std::optional<struct stat>> out;
  out.reserve(names.size());
  bool all_known = true;
  {
    std::shared_lock lk(mu_);
    for (const std::string& name : names) {
      auto it = attrs_.find(ObjectIdOf(path_of(name)));
      if (it == attrs_.end()) {
        all_known = false;
        break;
      }
      if (Young(it->second, now)) out.emplace_back(Unpack(it->second));
    }
  }
  if (forever && out.size() == names.size()) {
    answered_.fetch_add(1, std::memory_order_relaxed);
    return out;
  }
  if (lower_.health().down()) return Status(Code::kTimedOut, rel + ": LOWER is down");
  std::optional<WorkerOnlyScope> recheck;  // remembered: what the kernel is told may wait
  if (all_known) recheck.emplace(opt_.recheck_grace);
  auto got = lower_.StatEntries(rel, names);
  if (!got.ok()) return got;
  for (size_t i = 0; i < names.size(); ++i) {
    if (got.value()[i]) Remember(path_of(names[i]), *got.value()[i], now);
  }
  return got;
}

KnownLowerCounters KnownLower::counters() const {
  KnownLowerCounters c;
  {
    std::shared_lock lk(mu_);
    c.paths = attrs_.size();
    c.names = names_;
  }
  c.answered = answered_.load(std::memory_order_relaxed);
  c.last_known = last_known_.load(std::memory_order_relaxed);
  c.full = full_.load(std::memory_order_relaxed);
  c.ahead = ahead_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace epochfs::store
