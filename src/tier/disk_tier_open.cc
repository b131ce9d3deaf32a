// DiskTier (disk_tier.h): opening the directory (checks, lock, index; bounded
// per call), the scan that rebuilds a lost index, the sweep of orphans, the
// size, Start and Stop.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "epochfs/common/log.h"
#include "epochfs/tier/disk_format.h"
#include "epochfs/tier/disk_tier.h"

namespace epochfs::tier {
namespace {

uint64_t MonoNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::string Sub(uint64_t file_no) {
  char b[8];
  std::snprintf(b, sizeof b, "%02x", static_cast<unsigned>(file_no & 0xff));
  return b;
}

// The file number a data file's name spells, 0 if it spells none.
uint64_t FileNoOf(const char* name) {
  if (std::strlen(name) != 16) return 0;
  uint64_t v = 0;
  for (const char* p = name; *p != '\0'; ++p) {
    const char c = *p;
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return 0;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

// Calls fn(file_no, path) for every data file; `watch` (may be null) marks
// the directory's calls.
template <typename Fn>
void EachDataFile(const std::string& data_dir, CallWatch* watch, Fn&& fn) {
  for (unsigned sub = 0; sub < 256; ++sub) {
    char b[8];
    std::snprintf(b, sizeof b, "%02x", sub);
    const std::string dir = data_dir + "/" + b;
    DIR* d = nullptr;
    {
      CallWatch::Scope call(watch);
      d = ::opendir(dir.c_str());
    }
    if (d == nullptr) continue;
    while (true) {
      dirent* ent = nullptr;
      {
        CallWatch::Scope call(watch);
        ent = ::readdir(d);
      }
      if (ent == nullptr) break;
      if (ent->d_name[0] == '.') continue;
      fn(FileNoOf(ent->d_name), dir + "/" + ent->d_name);
    }
    ::closedir(d);
  }
}

// What Open's thread and its caller share: the watch, the result, and
// whether the caller gave up (then the thread disposes of the result).
struct Opening {
  CallWatch watch;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;
  Result<std::unique_ptr<DiskTier>> result = Status(Code::kInternal, "not opened");
};

}  // namespace

std::string DiskTier::PathOf(uint64_t file_no) const {
  char name[24];
  std::snprintf(name, sizeof name, "%016" PRIx64, file_no);
  return opt_.path + "/data/" + Sub(file_no) + "/" + name;
}

Result<std::unique_ptr<DiskTier>> DiskTier::Open(const DiskTierOptions& options) {
  if (options.start_timeout.count() == 0) return OpenNow(options, nullptr);
  auto o = std::make_shared<Opening>();
  std::thread([o, options] {
    auto r = OpenNow(options, &o->watch);
    std::unique_lock lock(o->mu);
    if (o->abandoned) {  // nobody waits: what it opened is closed here
      lock.unlock();
      return;
    }
    o->result = std::move(r);
    o->done = true;
    o->cv.notify_all();
  }).detach();
  const uint64_t bound = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(options.start_timeout).count());
  using std::chrono::milliseconds;
  const milliseconds step =
      std::min(options.start_timeout / 4 + milliseconds(1), milliseconds(100));
  std::unique_lock lock(o->mu);
  while (!o->done) {
    o->cv.wait_for(lock, step);
    if (!o->done && o->watch.Lasted(CallWatch::NowNs()) >= bound) {
      o->abandoned = true;
      return Status(Code::kTimedOut,
                    "cache.disk_path " + options.path + ": its start found no answer within " +
                        std::to_string(options.start_timeout.count()) + " ms");
    }
  }
  return std::move(o->result);
}

std::unique_ptr<DiskTier> DiskTier::FailedAtStart(const DiskTierOptions& options,
                                                  const std::string& why) {
  std::unique_ptr<DiskTier> t(new DiskTier(options));
  t->Fail(why);
  return t;
}

Result<std::unique_ptr<DiskTier>> DiskTier::OpenNow(const DiskTierOptions& options,
                                                    CallWatch* watch) {
  const std::string& dir = options.path;
  const std::string what = "cache.disk_path " + dir;
  struct stat st;
  {
    CallWatch::Scope call(watch);
    if (::stat(dir.c_str(), &st) != 0) return ErrnoStatus(Code::kNotFound, errno, what);
    if (!S_ISDIR(st.st_mode)) return NotDirectory(what + ": not a directory");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      return ErrnoStatus(Code::kPermissionDenied, errno, what + ": not writable");
    }
  }
  std::unique_ptr<DiskTier> t(new DiskTier(options));
  t->watch_ = watch;
  const std::string lock = dir + "/lock";
  t->lock_fd_.reset(CallWatch::Run(watch, [&] {
    return ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  }));
  if (!t->lock_fd_.valid()) return ErrnoStatus(Code::kPermissionDenied, errno, what + ": lock");
  if (CallWatch::Run(watch, [&] { return ::flock(t->lock_fd_.get(), LOCK_EX | LOCK_NB); }) != 0) {
    if (errno != EWOULDBLOCK) return ErrnoStatus(Code::kIoError, errno, what + ": lock");
    char pid[32] = {0};
    [[maybe_unused]] ssize_t n =
        CallWatch::Run(watch, [&] { return ::pread(t->lock_fd_.get(), pid, sizeof pid - 1, 0); });
    std::string p(pid);
    while (!p.empty() && (p.back() == '\n' || p.back() == ' ')) p.pop_back();
    return Status(Code::kBusy, what + ": in use by another epochfs daemon" +
                                   (p.empty() ? "" : " (pid " + p + ")"));
  }
  const std::string data = dir + "/data";
  auto make_dir = [&](const std::string& d) {
    return CallWatch::Run(watch, [&] { return ::mkdir(d.c_str(), 0700) == 0 || errno == EEXIST; });
  };
  if (!make_dir(data)) return ErrnoStatus(Code::kPermissionDenied, errno, what + ": data");
  for (unsigned sub = 0; sub < 256; ++sub) {
    const std::string d = data + "/" + Sub(sub);
    if (!make_dir(d)) return ErrnoStatus(Code::kPermissionDenied, errno, what + ": " + d);
  }
  if (Status s = t->Load(); !s.ok()) return Status(s.code(), what + ": " + s.message());
  t->watch_ = nullptr;
  return t;
}

Status DiskTier::Load() {
  const std::string path = opt_.path + "/index";
  std::vector<JournalEntry> live;
  uint32_t format = Journal::kFormat;
  auto j = Journal::Open(path, &live, watch_, &format);
  if (!j.ok() && j.status().code() != Code::kNotFound && j.status().code() != Code::kCorruption) {
    return j.status();
  }
  bool rewrite = !j.ok();
  if (!j.ok()) {
    if (j.status().code() == Code::kCorruption) log::Warn("disk tier: " + j.status().message() + "; scanning");
    live = Scan();
  } else if (format != Journal::kFormat) {
    // Copies keyed without the version's ctime and inode number: none can be
    // told from a copy renamed over its file with the same size and mtime,
    // so none is served. The index starts empty; the writer's sweep removes
    // their files (numbered below what this run writes).
    for (const JournalEntry& e : live) next_file_no_ = std::max(next_file_no_, e.file_no + 1);
    log::Warn("disk tier " + opt_.path + ": its index is of format " + std::to_string(format) +
              " (copies keyed by size and mtime only); its " + std::to_string(live.size()) +
              " copies are dropped and read again from LOWER");
    live.clear();
    rewrite = true;
  } else {
    journal_ = std::move(j).value();
    rewrite = journal_->dead() > live.size() + 1024;  // mostly dead: compact
  }
  if (rewrite) {
    auto fresh = Journal::Create(path, live, watch_);
    if (!fresh.ok()) return fresh.status();
    journal_ = std::move(fresh).value();
  }
  index_.reserve(live.size());
  news_.found.reserve(live.size());
  for (JournalEntry& e : live) {
    const cache::ObjectId id = e.key.Id();
    next_file_no_ = std::max(next_file_no_, e.file_no + 1);
    auto [it, added] = index_.try_emplace(id);
    if (!added) continue;  // one copy per key (the first)
    Entry& en = it->second;
    en.file_no = e.file_no;
    en.data_len = e.data_len;
    en.ready = true;
    used_ += e.data_len;
    on_disk_ += e.data_len;
    ++objects_;
    news_.found.push_back({id, e.data_len, e.key.length != 0 ? store::ObjectIdOf(e.key.rel) : 0});
    en.key = std::move(e.key);
  }
  if (!index_.empty()) news_flag_.store(true, std::memory_order_release);
  JournalSizes();
  // The size before the first write; "auto" is re-checked as it fills.
  budget_ = opt_.size;
  Recheck(true);
  log::Info("disk tier " + opt_.path + ": " + std::to_string(objects_) + " objects, " +
            std::to_string(on_disk_) + " bytes (" + (rewrite ? "index rebuilt" : "index replayed") +
            ")");
  return Status::Ok();
}

std::vector<JournalEntry> DiskTier::Scan() {
  std::vector<JournalEntry> live;
  EachDataFile(opt_.path + "/data", watch_, [&](uint64_t file_no, const std::string& path) {
    CallWatch::Scope call(watch_);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st;
    std::vector<uint8_t> head(kHeaderFixed + 4096 + 8);
    ssize_t n = fd.valid() ? ::pread(fd.get(), head.data(), head.size(), 0) : -1;
    JournalEntry e;
    size_t hlen = 0;
    const bool ok = file_no != 0 && n > 0 && ::fstat(fd.get(), &st) == 0 &&
                    DecodeHeader(head.data(), static_cast<size_t>(n), &e.key, &e.data_len, &hlen).ok() &&
                    static_cast<uint64_t>(st.st_size) == hlen + e.data_len + SumsBytes(e.data_len);
    if (!ok) {  // not ours, or cut short: its bytes could never be served
      ::unlink(path.c_str());
      return;
    }
    e.file_no = file_no;
    live.push_back(std::move(e));
  });
  std::sort(live.begin(), live.end(),
            [](const JournalEntry& a, const JournalEntry& b) { return a.file_no < b.file_no; });
  return live;
}

void DiskTier::SweepOrphans() {
  // The indexed file numbers, sorted: copied under the lock (no allocation per
  // entry, so that readers and the mount's first look at the tier wait little
  // even with a million), sorted outside it.
  std::vector<uint64_t> known;
  {
    std::lock_guard lock(mu_);
    known.reserve(index_.size());
    for (const auto& [id, e] : index_) known.push_back(e.file_no);
  }
  std::sort(known.begin(), known.end());
  // Files numbered from next_file_no_ on are this run's (written meanwhile).
  uint64_t first_new = 0;
  {
    std::lock_guard lock(mu_);
    first_new = next_file_no_;
  }
  uint64_t swept = 0;
  EachDataFile(opt_.path + "/data", nullptr, [&](uint64_t file_no, const std::string& path) {
    if (file_no != 0 &&
        (std::binary_search(known.begin(), known.end(), file_no) || file_no >= first_new)) {
      return;
    }
    if (::unlink(path.c_str()) == 0) ++swept;
  });
  ::unlink((opt_.path + "/index.new").c_str());
  if (swept != 0) log::Info("disk tier: removed " + std::to_string(swept) + " unindexed file(s)");
}

void DiskTier::Recheck(bool force) {
  if (!opt_.size_auto || state() == State::kFailed) return;
  const uint64_t now = MonoNs();
  {
    std::lock_guard lock(mu_);
    if (!force && since_check_ < (64u << 20) && now - last_check_ns_ < 1'000'000'000) return;
    since_check_ = 0;
    last_check_ns_ = now;
  }
  struct statvfs vfs;
  {
    CallWatch::Scope call(watch_);  // Open's only
    if (::statvfs(opt_.path.c_str(), &vfs) != 0) return;
  }
  const uint64_t total = uint64_t{vfs.f_blocks} * vfs.f_frsize;
  const uint64_t free = uint64_t{vfs.f_bavail} * vfs.f_frsize;
  const uint64_t margin = opt_.margin_is_percent
                              ? static_cast<uint64_t>(double(total) * opt_.margin_percent / 100.0)
                              : opt_.margin;
  const uint64_t reserved = opt_.reserved ? opt_.reserved() : 0;
  std::lock_guard lock(mu_);
  const uint64_t room = free + on_disk_;
  const uint64_t want = room > margin + reserved ? room - margin - reserved : 0;
  if (want == budget_) return;
  const uint64_t diff = want > budget_ ? want - budget_ : budget_ - want;
  if (!force && diff < std::max<uint64_t>(budget_ / 100, 1u << 20)) return;
  budget_ = want;
  // Below the floor (another user of the filesystem took its room): full,
  // as after an ENOSPC, until there is room again.
  if (state() == State::kFull && want > on_disk_) {
    state_.store(State::kOk);
  } else if (state() == State::kOk && want < on_disk_) {
    state_.store(State::kFull);
    log::Warn("disk tier " + opt_.path + ": its filesystem is below cache.disk_margin; evicting");
  }
  news_.budget_changed = true;
  news_.budget = budget_;
  news_flag_.store(true, std::memory_order_release);
}

Status DiskTier::Start() {
  if (!lock_fd_.valid()) return Status::Ok();  // FailedAtStart's: nothing to start
  // The pid in the lock file names the holder to a second daemon.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_.get(), 0) != 0 ||
      ::pwrite(lock_fd_.get(), pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    log::Warn("disk tier " + opt_.path + ": cannot write its lock file");
  }
  auto io = DiskIo::Create(opt_.queue_depth, opt_.timeout);
  if (!io.ok()) {
    Fail(io.status().message());
    return io.status();
  }
  io_ = std::move(io).value();
  writer_ = std::thread([this] { WriterLoop(); });
  return Status::Ok();
}

bool DiskTier::Stop() {
  if (writer_.joinable()) {
    std::unique_lock lock(mu_);
    stop_ = true;
    cv_.notify_all();
    auto exited = [&] { return writer_exited_; };
    if (opt_.timeout.count() == 0) {
      cv_.wait(lock, exited);
    } else if (!cv_.wait_for(lock, opt_.timeout + std::chrono::seconds(1), exited)) {
      lock.unlock();
      log::Warn("disk tier " + opt_.path + ": its writer does not return (the disk does not "
                "answer); left behind");
      return false;
    }
    lock.unlock();
    writer_.join();
  }
  // A call given up on: the last calls on the tier's files (the journal's
  // cut, closes) would wait on the disk too.
  if (io_ != nullptr && io_->hung()) return false;
  io_.reset();
  std::lock_guard lock(mu_);
  cv_.notify_all();
  if (journal_ && state() != State::kFailed && journal_->dead() > objects_ + 1024) {
    std::vector<JournalEntry> live;
    for (const auto& [id, e] : index_) {
      if (e.ready) live.push_back(JournalEntry{e.file_no, e.data_len, e.key});
    }
    auto fresh = Journal::Create(opt_.path + "/index", live);
    if (fresh.ok()) journal_ = std::move(fresh).value();
  }
  return true;
}

DiskTier::~DiskTier() {
  // Not left behind here: this memory is the writer's. (The journal's cut may
  // wait on a disk that does not answer.)
  if (!Stop() && writer_.joinable()) writer_.join();
}

}  // namespace epochfs::tier
