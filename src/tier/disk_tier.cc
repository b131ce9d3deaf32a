// DiskTier (disk_tier.h): the index, reads, writes and faults. Opening the
// directory, the scan, the sweep and the size live in disk_tier_open.cc.
#include "epochfs/tier/disk_tier.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "epochfs/common/fresh_bytes.h"
#include "epochfs/common/log.h"
#include "epochfs/tier/disk_format.h"

namespace epochfs::tier {
namespace {

// An object file's header, data and sums as one call reads or writes them:
// owned with the call, so kept until the kernel returns past a NoAnswer.
struct Bufs {
  std::vector<uint8_t> head, sums;
  store::ObjectRef obj;
  std::unique_ptr<DirectBuffers::Buffer> direct;  // an O_DIRECT read's: the whole file
};

}  // namespace

size_t DiskTier::EntryBytes(size_t path_len) {
  // The map node (next pointer, cached hash, key, Entry), its bucket, and the
  // path's heap bytes past the string's inline buffer.
  const size_t node = sizeof(void*) + sizeof(size_t) + sizeof(cache::ObjectId) + sizeof(Entry);
  return node + sizeof(void*) + (path_len > 15 ? path_len + 1 : 0);
}

store::ObjectRef DiskTier::Read(cache::ObjectId id, const store::LowerKey& key,
                                const store::Version& v) {
  if (io_ == nullptr || state() == State::kFailed) return nullptr;
  Entry e;
  {
    std::lock_guard lock(mu_);
    auto it = index_.find(id);
    if (it == index_.end() || !it->second.ready) return nullptr;
    const store::LowerKey& k = it->second.key;
    if (k.rel != key.rel || k.offset != key.offset || k.length != key.length) return nullptr;
    if (!k.Matches(v)) {  // LOWER holds another version now: the copy is stale
      c_.stale.fetch_add(1, std::memory_order_relaxed);
      DropLocked(id, true);
      return nullptr;
    }
    e = it->second;
  }
  const std::string path = PathOf(e.file_no);
  const size_t hlen = HeaderBytes(e.key);
  const uint64_t slen = SumsBytes(e.data_len);
  const uint64_t total = hlen + e.data_len + slen;
  auto bufs = std::make_shared<Bufs>();
  auto obj = std::make_shared<store::Object>();
  bool direct = direct_.load(std::memory_order_relaxed) && total <= kDirectMaxBytes;
  DiskIo::FileRead fr;
  uint64_t moved = 0;
  if (direct) {
    // The whole file, rounded up to the alignment, into a reused buffer: no
    // page cache copy, no fresh buffer to zero-fill and unmap.
    bufs->direct = direct_buffers_.Take(total);
    const uint64_t len = (total + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
    fr = io_->ReadFile(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECT,
                       {{0, bufs->direct->data, len}}, bufs, &moved);
    if (fr.result == -EINVAL) {  // O_DIRECT refused (the filesystem, its block size)
      if (direct_.exchange(false)) {
        log::Info("disk tier " + opt_.path + ": no O_DIRECT reads here; buffered reads");
      }
      direct_buffers_.Give(std::move(bufs->direct));
      direct = false;
    }
  }
  if (!direct) {
    bufs->head.resize(hlen);
    bufs->sums.resize(slen);
    SizeForRead(&obj->data, e.data_len);  // its pages in one call, not a fault each
    bufs->obj = obj;
    fr = io_->ReadFile(
        path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW,
        {{0, bufs->head.data(), hlen},
         {hlen, reinterpret_cast<uint8_t*>(obj->data.data()), e.data_len},
         {hlen + e.data_len, bufs->sums.data(), slen}},
        bufs);
    moved = total;
  }
  const int r = fr.result;
  if (r == DiskIo::kNoAnswer) {  // bufs, the direct buffer with it, stay with the call
    Fail(path + ": " + (fr.open_failed ? "open: " : "read: ") + NoAnswer());
    return nullptr;
  }
  // The direct buffer goes back when this returns; its bytes are copied out
  // (or not served) before.
  struct GiveBack {
    DirectBuffers& to;
    Bufs& bufs;
    ~GiveBack() { to.Give(std::move(bufs.direct)); }
  } give_back{direct_buffers_, *bufs};
  if (fr.open_failed) {
    {
      std::lock_guard lock(mu_);
      auto it = index_.find(id);
      if (it != index_.end() && it->second.file_no == e.file_no) DropLocked(id, true);
    }
    if (r != -ENOENT) Fail(path + ": " + std::strerror(-r));
    return nullptr;
  }
  if (r < 0 && r != DiskIo::kShort) {
    Fail(path + ": read: " + std::strerror(-r));
    return nullptr;
  }
  const bool whole = r == 0 && moved >= total;
  const uint8_t* head = direct ? bufs->direct->data : bufs->head.data();
  const char* data = direct ? reinterpret_cast<const char*>(head + hlen) : obj->data.data();
  const uint8_t* sums = direct ? head + hlen + e.data_len : bufs->sums.data();
  store::LowerKey found;
  uint64_t found_len = 0;
  size_t found_hlen = 0;
  const bool ok = whole && DecodeHeader(head, hlen, &found, &found_len, &found_hlen).ok() &&
                  found == e.key && found_len == e.data_len &&
                  BadBlocks(data, e.data_len, sums) == 0;
  c_.reads_bytes.fetch_add(total, std::memory_order_relaxed);
  if (!ok) {  // torn or flipped: never served; the caller reads LOWER
    c_.checksum_errors.fetch_add(1, std::memory_order_relaxed);
    log::Warn("disk tier: " + path + " (" + e.key.rel + ") failed its checksum; read from LOWER");
    std::lock_guard lock(mu_);
    auto it = index_.find(id);
    if (it != index_.end() && it->second.file_no == e.file_no) DropLocked(id, true);
    return nullptr;
  }
  if (direct) {
    CopyFresh(&obj->data, data, e.data_len);  // the verified bytes
    c_.direct_reads.fetch_add(1, std::memory_order_relaxed);
  }
  obj->id = id;
  obj->version = v;
  // Every block verified against its sum: the object's checksum is theirs
  // (store/object.h), not a second pass over the bytes.
  obj->checksum = store::ObjectChecksumOfSums(sums, slen);
  c_.hits.fetch_add(1, std::memory_order_relaxed);
  return obj;
}

bool DiskTier::Write(cache::ObjectId id, const store::LowerKey& key, store::ObjectRef obj) {
  std::lock_guard lock(mu_);
  if (auto it = index_.find(id); it != index_.end()) {
    if (it->second.key == key) return true;  // held (or being written) already
    DropLocked(id, false);
  }
  const uint64_t size = obj->data.size();
  if (io_ == nullptr || state() == State::kFailed || used_ + size > budget_ ||
      queued_bytes_ + size > opt_.max_queued_bytes) {
    LostLocked(id);
    return false;
  }
  Entry e;
  e.file_no = next_file_no_++;
  e.data_len = size;
  e.key = key;
  index_.emplace(id, e);
  used_ += size;
  queued_bytes_ += size;
  queue_.push_back(Job{id, e.file_no, key, std::move(obj)});
  cv_.notify_all();
  return true;
}

void DiskTier::Erase(cache::ObjectId id) {
  std::lock_guard lock(mu_);
  DropLocked(id, false);
}

void DiskTier::DropLocked(cache::ObjectId id, bool lost) {
  auto it = index_.find(id);
  if (it == index_.end()) return;
  const Entry& e = it->second;
  used_ -= e.data_len;
  if (e.ready) {
    on_disk_ -= e.data_len;
    --objects_;
    // Its DEL and unlink are the writer's: no disk call under the lock (a
    // disk that stops answering must not hold the readers).
    if (state() != State::kFailed) {
      removals_.push_back(e.file_no);
      cv_.notify_all();
    }
  }  // being written: the writer finds it gone and removes its file
  index_.erase(it);
  if (lost) LostLocked(id);
}

void DiskTier::LostLocked(cache::ObjectId id) {
  news_.lost.push_back(id);
  news_flag_.store(true, std::memory_order_release);
}

store::TierNews DiskTier::TakeNews() {
  std::lock_guard lock(mu_);
  news_flag_.store(false, std::memory_order_release);
  return std::exchange(news_, store::TierNews{});
}

void DiskTier::Fail(const std::string& why) {
  if (state_.exchange(State::kFailed) == State::kFailed) return;
  log::Warn("disk tier " + opt_.path + " failed (" + why +
            "): reads are served from RAM and LOWER from now on");
  std::lock_guard lock(mu_);
  news_.budget_changed = true;
  news_.budget = budget_ = 0;
  news_flag_.store(true, std::memory_order_release);
}

// REQUIRES: mu_ held. The filesystem is full: admit nothing until what is held
// shrinks (the placement evicts to the new budget).
void DiskTier::Full() {
  if (state() == State::kFailed) return;
  if (state_.exchange(State::kFull) != State::kFull) {
    log::Warn("disk tier " + opt_.path + ": no space left; evicting and admitting less");
  }
  budget_ = on_disk_ - on_disk_ / 8;
  news_.budget_changed = true;
  news_.budget = budget_;
  news_flag_.store(true, std::memory_order_release);
}

void DiskTier::WriterLoop() {
  SweepOrphans();
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty() || !removals_.empty(); });
    if (!removals_.empty()) {
      std::vector<uint64_t> gone = std::exchange(removals_, {});
      writing_ = true;
      lock.unlock();
      for (uint64_t file_no : gone) Remove(file_no);
      lock.lock();
      writing_ = false;
      cv_.notify_all();
      continue;
    }
    if (queue_.empty()) break;  // stop_, and every queued write landed
    Job job = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    WriteOne(job);
    lock.lock();
    queued_bytes_ -= job.obj->data.size();
    writing_ = false;
    cv_.notify_all();
  }
  writer_exited_ = true;
  cv_.notify_all();
}

void DiskTier::Remove(uint64_t file_no) {
  if (state() == State::kFailed) return;
  // The DEL first: a crash between the two leaves an orphan file (swept at
  // the next start), never an index entry without its file's identity.
  if (Status s = journal_->Del(file_no); !s.ok()) log::Warn("disk tier: " + s.message());
  JournalSizes();
  ::unlink(PathOf(file_no).c_str());
}

void DiskTier::JournalSizes() {
  journal_bytes_.store(journal_->bytes(), std::memory_order_relaxed);
  journal_written_.store(journal_->written(), std::memory_order_relaxed);
}

void DiskTier::WriteOne(Job& job) {
  const std::string path = PathOf(job.file_no);
  auto still_wanted = [&] {
    auto it = index_.find(job.id);
    return it != index_.end() && it->second.file_no == job.file_no;
  };
  {
    std::lock_guard lock(mu_);
    if (!still_wanted() || state() == State::kFailed) {
      if (still_wanted()) DropLocked(job.id, true);
      return;
    }
  }
  auto bufs = std::make_shared<Bufs>();
  const std::vector<char>& data = job.obj->data;
  bufs->head = EncodeHeader(job.key, data.size());
  bufs->sums = EncodeSums(data.data(), data.size());
  bufs->obj = job.obj;
  const uint64_t hlen = bufs->head.size();
  const uint64_t total = hlen + data.size() + bufs->sums.size();
  int err = 0;
  const int fd = io_->Open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd == DiskIo::kNoAnswer) {
    Fail(path + ": open: " + NoAnswer());
    return;
  }
  if (fd < 0) {
    err = -fd;
  } else {
    const int r = io_->Transfer(
        true, fd,
        {{0, bufs->head.data(), hlen},
         {hlen, reinterpret_cast<uint8_t*>(const_cast<char*>(data.data())), data.size()},
         {hlen + data.size(), bufs->sums.data(), bufs->sums.size()}},
        bufs);
    if (r == DiskIo::kNoAnswer) {
      Fail(path + ": write: " + NoAnswer());
      return;
    }
    io_->Close(fd);
    if (r < 0) err = r == DiskIo::kShort ? ENOSPC : -r;
  }
  if (err == 0) {
    {
      std::lock_guard lock(mu_);
      if (!still_wanted()) err = -1;  // erased while written: nothing lost
    }
    if (err == 0) {
      Status s = journal_->Put(JournalEntry{job.file_no, data.size(), job.key});
      JournalSizes();
      err = s.ok() ? 0 : s.code() == Code::kNoSpace ? ENOSPC : EIO;
    }
  }
  std::unique_lock lock(mu_);
  if (err == 0 && still_wanted()) {
    Entry& e = index_[job.id];
    e.ready = true;
    on_disk_ += data.size();
    ++objects_;
    c_.writes.fetch_add(1, std::memory_order_relaxed);
    c_.writes_bytes.fetch_add(total, std::memory_order_relaxed);
    since_check_ += total;
    if (state() == State::kFull && !opt_.size_auto) state_.store(State::kOk);
    lock.unlock();
    Recheck(false);
    return;
  }
  if (err == 0) {  // erased after its PUT: the DEL and the file go
    removals_.push_back(job.file_no);
    return;
  }
  lock.unlock();
  ::unlink(path.c_str());
  if (err == -1) return;
  lock.lock();
  c_.write_errors.fetch_add(1, std::memory_order_relaxed);
  if (still_wanted()) DropLocked(job.id, true);
  if (err == ENOSPC || err == EDQUOT) {
    Full();
  } else {
    lock.unlock();
    Fail(path + ": write: " + std::strerror(err));
  }
}

std::string DiskTier::NoAnswer() const {
  return "no answer within " + std::to_string(io_->timeout().count()) + " ms";
}

void DiskTier::Drain() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] {
    return (queue_.empty() && removals_.empty() && !writing_) || !writer_.joinable();
  });
}

std::string DiskTier::FileOf(cache::ObjectId id) const {
  std::lock_guard lock(mu_);
  auto it = index_.find(id);
  return it == index_.end() || !it->second.ready ? "" : PathOf(it->second.file_no);
}

store::TierStats DiskTier::stats() const {
  auto ld = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  store::TierStats s;
  {
    std::lock_guard lock(mu_);
    s.budget = budget_;
    s.bytes = on_disk_;
    s.objects = objects_;
    s.queued_bytes = queued_bytes_;
  }
  s.index_bytes = ld(journal_bytes_);
  s.writes_bytes = ld(journal_written_);
  s.hits = ld(c_.hits);
  s.reads_bytes = ld(c_.reads_bytes);
  s.writes = ld(c_.writes);
  s.writes_bytes += ld(c_.writes_bytes);
  s.checksum_errors = ld(c_.checksum_errors);
  s.stale = ld(c_.stale);
  s.write_errors = ld(c_.write_errors);
  switch (state()) {
    case State::kOk: s.state = "ok"; break;
    case State::kFull: s.state = "full"; break;
    case State::kFailed: s.state = "failed"; break;
  }
  return s;
}

}  // namespace epochfs::tier
