#include "epochfs/control/attribution.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "epochfs/common/unique_fd.h"

namespace epochfs::control {
namespace {

// Opens /proc/<pid>/<file> (`path`): NotFound when the process does not
// exist (or vanished), IoError otherwise.
Result<UniqueFd> OpenProcFile(pid_t pid, const std::string& path) {
  if (pid <= 0) return NotFound("pid " + std::to_string(pid));
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    int e = errno;
    if (e == ENOENT || e == ESRCH) return NotFound("no process " + std::to_string(pid));
    return ErrnoStatus(Code::kIoError, e, path);
  }
  return fd;
}

// Reads `fd` (of OpenProcFile) from its start into buf (up to size - 1
// bytes): NotFound when the process vanished, IoError otherwise.
Result<std::string_view> ReadProcFd(pid_t pid, int fd, const std::string& path, char* buf,
                                    size_t size) {
  size_t len = 0;
  while (len < size - 1) {
    ssize_t n = ::pread(fd, buf + len, size - 1 - len, static_cast<off_t>(len));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      if (e == ESRCH) return NotFound("no process " + std::to_string(pid));
      return ErrnoStatus(Code::kIoError, e, path);
    }
    if (n == 0) break;
    len += static_cast<size_t>(n);
  }
  return std::string_view(buf, len);
}

// Reads /proc/<pid>/<file> (`path`) into buf (up to size - 1 bytes).
Result<std::string_view> ReadProcFile(pid_t pid, const std::string& path, char* buf,
                                      size_t size) {
  Result<UniqueFd> fd = OpenProcFile(pid, path);
  if (!fd.ok()) return fd.status();
  return ReadProcFd(pid, fd.value().get(), path, buf, size);
}

// The most /proc/<pid>/stat descriptors RealProcReader holds; past it, all
// are let go and opened again as asked.
constexpr size_t kHeldStats = 256;

class RealProcReader final : public ProcReader {
 public:
  explicit RealProcReader(std::string root) : root_(std::move(root)) {}

  Result<ProcStat> Stat(pid_t pid) const override {
    const std::string path = root_ + "/" + std::to_string(pid) + "/stat";
    char buf[1024];
    Result<std::string_view> text = ReadStat(pid, path, buf, sizeof(buf));
    if (!text.ok()) return text.status();
    std::string_view s = text.value();
    // "pid (comm) state ppid ... starttime(22) ...": comm may hold spaces and
    // parentheses, so fields are counted after the last ')'.
    size_t paren = s.rfind(')');
    if (paren == std::string_view::npos) return IoError(path + ": unparsable");
    s.remove_prefix(paren + 1);
    ProcStat out;
    int field = 2;  // the field that ended at ')'
    size_t i = 0;
    bool have_ppid = false, have_start = false;
    while (i < s.size() && !have_start) {
      while (i < s.size() && s[i] == ' ') ++i;
      size_t b = i;
      while (i < s.size() && s[i] != ' ' && s[i] != '\n') ++i;
      if (b == i) break;
      ++field;
      std::string_view tok = s.substr(b, i - b);
      if (field == 4 || field == 22) {
        uint64_t v = 0;
        for (char c : tok) {
          if (c < '0' || c > '9') return IoError(path + ": unparsable field " + std::to_string(field));
          v = v * 10 + static_cast<uint64_t>(c - '0');
        }
        if (field == 4) {
          out.ppid = static_cast<pid_t>(v);
          have_ppid = true;
        } else {
          out.start_time = v;
          have_start = true;
        }
      }
    }
    if (!have_ppid || !have_start) return IoError(path + ": truncated");
    return out;
  }

  Result<ProcOwner> Owner(pid_t pid) const override {
    const std::string path = root_ + "/" + std::to_string(pid) + "/status";
    char buf[4096];
    Result<std::string_view> text = ReadProcFile(pid, path, buf, sizeof(buf));
    if (!text.ok()) return text.status();
    std::string_view s = text.value();
    // "Uid:\t<real>\t<effective>\t<saved>\t<fs>\n"
    size_t at = s.find("\nUid:");
    if (at == std::string_view::npos) return IoError(path + ": no Uid line");
    s.remove_prefix(at + 5);
    uint64_t ids[2] = {0, 0};
    for (uint64_t& id : ids) {
      while (!s.empty() && (s.front() == '\t' || s.front() == ' ')) s.remove_prefix(1);
      if (s.empty() || s.front() < '0' || s.front() > '9') return IoError(path + ": bad Uid line");
      while (!s.empty() && s.front() >= '0' && s.front() <= '9') {
        id = id * 10 + static_cast<uint64_t>(s.front() - '0');
        if (id > 0xffffffffu) return IoError(path + ": bad Uid line");
        s.remove_prefix(1);
      }
    }
    return ProcOwner{static_cast<uid_t>(ids[0]), static_cast<uid_t>(ids[1])};
  }

 private:
  // /proc/<pid>/stat, read through a descriptor held per pid: every open
  // asks for its reader's stat, and an open and close of a /proc file cost
  // more than the read. A descriptor of /proc/<pid>/stat reads the process
  // it was opened for, or fails with ESRCH once that process is gone (its
  // pid may be another's by then): the file is then opened again by number,
  // so what is read is always the process that has the pid now, as a read
  // by path would be.
  Result<std::string_view> ReadStat(pid_t pid, const std::string& path, char* buf,
                                    size_t size) const {
    std::shared_ptr<const UniqueFd> fd;
    {
      std::lock_guard lk(mu_);
      if (auto it = held_.find(pid); it != held_.end()) fd = it->second;
    }
    if (fd != nullptr) {
      // One read: the line is shorter than buf, and ends with its newline.
      ssize_t n;
      do {
        n = ::pread(fd->get(), buf, size - 1, 0);
      } while (n < 0 && errno == EINTR);
      if (n > 0 && static_cast<size_t>(n) < size - 1 && buf[n - 1] == '\n') {
        return std::string_view(buf, static_cast<size_t>(n));
      }
      std::lock_guard lk(mu_);
      if (auto it = held_.find(pid); it != held_.end() && it->second == fd) held_.erase(it);
    }
    Result<UniqueFd> opened = OpenProcFile(pid, path);
    if (!opened.ok()) return opened.status();
    fd = std::make_shared<const UniqueFd>(std::move(opened).value());
    Result<std::string_view> text = ReadProcFd(pid, fd->get(), path, buf, size);
    if (text.ok()) {
      std::lock_guard lk(mu_);
      if (held_.size() >= kHeldStats) held_.clear();
      held_[pid] = std::move(fd);
    }
    return text;
  }

  std::string root_;
  mutable std::mutex mu_;
  // guarded by mu_: a descriptor of /proc/<pid>/stat by pid (kHeldStats at most)
  mutable std::unordered_map<pid_t, std::shared_ptr<const UniqueFd>> held_;
};

}  // namespace

std::unique_ptr<ProcReader> MakeProcReader(std::string proc_root) {
  return std::make_unique<RealProcReader>(std::move(proc_root));
}

Attributor::Attributor(std::unique_ptr<ProcReader> proc, AttributorOptions options)
    : proc_(std::move(proc)), opt_(options) {}

Status Attributor::AddPid(JobId job, pid_t pid) { return AddPids(job, {pid}); }

Status Attributor::AddPids(JobId job, const std::vector<pid_t>& pids, uid_t owner) {
  std::vector<uint64_t> starts;
  starts.reserve(pids.size());
  for (pid_t pid : pids) {  // /proc first, without the mutex
    if (pid <= 0) return InvalidArgument("pid " + std::to_string(pid) + " is not a process");
    Result<ProcStat> st = proc_->Stat(pid);
    if (!st.ok()) return InvalidArgument("pid " + std::to_string(pid) + ": no such process");
    if (owner != kAnyOwner) {
      Result<ProcOwner> o = proc_->Owner(pid);
      if (!o.ok()) return InvalidArgument("pid " + std::to_string(pid) + ": no such process");
      if (o.value().real != owner && o.value().effective != owner) {
        return NotPermitted("pid " + std::to_string(pid) + ": not a process of uid " +
                            std::to_string(owner));
      }
    }
    starts.push_back(st.value().start_time);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < pids.size(); ++i) {
    auto it = registered_.find(pids[i]);
    if (it != registered_.end() && it->second.start_time == starts[i] && it->second.job != job) {
      return InvalidArgument("pid " + std::to_string(pids[i]) + " is registered to another job");
    }
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    registered_[pids[i]] = Registered{starts[i], job};
    if (auto c = cache_.find(pids[i]); c != cache_.end()) {
      lru_.erase(c->second.lru);
      cache_.erase(c);
    }
  }
  DropNegativesLocked();
  ++generation_;
  return Status::Ok();
}

void Attributor::RemoveJob(JobId job) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(registered_, [job](const auto& kv) { return kv.second.job == job; });
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (it->second.job == job) {
      lru_.erase(it->second.lru);
      it = cache_.erase(it);
    } else {
      ++it;
    }
  }
  ++generation_;
}

std::vector<pid_t> Attributor::Pids(JobId job) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<pid_t> out;
  for (const auto& [pid, r] : registered_) {
    if (r.job == job) out.push_back(pid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Attributor::Liveness Attributor::Alive(JobId job) const {
  std::vector<std::pair<pid_t, uint64_t>> mine;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [pid, r] : registered_) {
      if (r.job == job) mine.emplace_back(pid, r.start_time);
    }
  }
  Liveness l;
  l.registered = mine.size();
  for (const auto& [pid, start] : mine) {  // /proc reads outside the lock
    Result<ProcStat> st = proc_->Stat(pid);
    if (st.ok() && st.value().start_time == start) ++l.alive;
  }
  return l;
}

void Attributor::ForgetExited(JobId job) {
  std::vector<std::pair<pid_t, uint64_t>> mine;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [pid, r] : registered_) {
      if (r.job == job) mine.emplace_back(pid, r.start_time);
    }
  }
  std::vector<std::pair<pid_t, uint64_t>> dead;
  for (const auto& [pid, start] : mine) {  // /proc reads outside the lock
    Result<ProcStat> st = proc_->Stat(pid);
    if (!st.ok() || st.value().start_time != start) dead.emplace_back(pid, start);
  }
  if (dead.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [pid, start] : dead) {
    auto it = registered_.find(pid);
    if (it != registered_.end() && it->second.job == job && it->second.start_time == start) {
      registered_.erase(it);
    }
  }
  ++generation_;
}

size_t Attributor::cache_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

void Attributor::DropNegativesLocked() {
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (it->second.job == kNoJob) {
      lru_.erase(it->second.lru);
      it = cache_.erase(it);
    } else {
      ++it;
    }
  }
}

bool Attributor::Known(pid_t pid, uint64_t start, JobId* job) {
  if (auto r = registered_.find(pid); r != registered_.end() && r->second.start_time == start) {
    *job = r->second.job;
    return true;
  }
  auto c = cache_.find(pid);
  if (c == cache_.end()) return false;
  if (c->second.start_time != start) {  // the pid was reused: the entry is stale
    lru_.erase(c->second.lru);
    cache_.erase(c);
    return false;
  }
  lru_.splice(lru_.begin(), lru_, c->second.lru);
  *job = c->second.job;
  return true;
}

void Attributor::CacheLocked(pid_t pid, uint64_t start, JobId job) {
  if (opt_.cache_capacity == 0) return;
  if (auto c = cache_.find(pid); c != cache_.end()) {
    c->second.start_time = start;
    c->second.job = job;
    lru_.splice(lru_.begin(), lru_, c->second.lru);
    return;
  }
  while (cache_.size() >= opt_.cache_capacity) {
    cache_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(pid);
  cache_.emplace(pid, Cached{start, job, lru_.begin()});
}

JobId Attributor::Lookup(pid_t pid) {
  if (pid <= 0) return kNoJob;
  Result<ProcStat> st = proc_->Stat(pid);
  if (!st.ok()) return kNoJob;
  uint64_t gen;
  JobId found = kNoJob;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Known(pid, st.value().start_time, &found)) return found;
    gen = generation_;
  }
  std::vector<std::pair<pid_t, uint64_t>> chain{{pid, st.value().start_time}};
  pid_t p = st.value().ppid;
  for (int depth = 0; depth < opt_.max_depth && p > 0; ++depth) {
    Result<ProcStat> s = proc_->Stat(p);
    if (!s.ok()) break;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (Known(p, s.value().start_time, &found)) break;
    }
    chain.emplace_back(p, s.value().start_time);
    if (s.value().ppid == p) break;  // defensive: a broken table must not loop
    p = s.value().ppid;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (generation_ == gen) {
    for (const auto& [cp, start] : chain) CacheLocked(cp, start, found);
  }
  return found;
}

}  // namespace epochfs::control
