// DiskTier (disk_tier.h): the index, reads, writes and faults. Opening the
// directory, the scan, the sweep and the size live in disk_tier_open.cc.
#include "epochfs/tier/disk_tier.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "epochfs/common/hash.h"
#include "epochfs/common/log.h"
#include "epochfs/tier/disk_format.h"

namespace epochfs::tier {
namespace {

constexpr uint32_t kOpBytes = 64u << 20;  // the largest single read or write

// Completion of a batch of ops (RunOps).
struct Batch {
  std::mutex mu;
  std::condition_variable cv;
  size_t left = 0;
  std::vector<int>* res = nullptr;
};

void OpDone(spill::IoOp* op, int res) {
  auto* b = static_cast<Batch*>(op->ctx);
  std::lock_guard lock(b->mu);
  (*b->res)[reinterpret_cast<uintptr_t>(op->ctx2)] = res;
  if (--b->left == 0) b->cv.notify_all();
}

// Adds ops covering [buf, buf + len) at `offset`, each at most kOpBytes.
void AddOps(std::vector<spill::IoOp>* ops, bool write, int fd, uint64_t offset, uint8_t* buf,
            uint64_t len) {
  for (uint64_t done = 0; done < len; done += kOpBytes) {
    spill::IoOp op;
    op.write = write;
    op.fd = fd;
    op.offset = offset + done;
    op.buf = buf + done;
    op.len = static_cast<uint32_t>(std::min<uint64_t>(kOpBytes, len - done));
    ops->push_back(op);
  }
}

}  // namespace

size_t DiskTier::EntryBytes(size_t path_len) {
  // The map node (next pointer, cached hash, key, Entry), its bucket, and the
  // path's heap bytes past the string's inline buffer.
  const size_t node = sizeof(void*) + sizeof(size_t) + sizeof(cache::ObjectId) + sizeof(Entry);
  return node + sizeof(void*) + (path_len > 15 ? path_len + 1 : 0);
}

bool DiskTier::RunOps(std::vector<spill::IoOp>& ops, std::vector<int>* res) {
  if (ops.empty()) return true;
  Batch b;
  b.left = ops.size();
  b.res = res;
  res->assign(ops.size(), 0);
  std::vector<spill::IoOp*> ptrs;
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i].ctx = &b;
    ops[i].ctx2 = reinterpret_cast<void*>(static_cast<uintptr_t>(i));
    ops[i].done = OpDone;
    ptrs.push_back(&ops[i]);
  }
  engine_->Submit(ptrs);
  std::unique_lock lock(b.mu);
  b.cv.wait(lock, [&] { return b.left == 0; });
  for (size_t i = 0; i < ops.size(); ++i) {
    if ((*res)[i] < 0 || static_cast<uint32_t>((*res)[i]) != ops[i].len) return false;
  }
  return true;
}

store::ObjectRef DiskTier::Read(cache::ObjectId id, const store::LowerKey& key,
                                const store::Version& v) {
  if (engine_ == nullptr || state() == State::kFailed) return nullptr;
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
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    const int err = errno;
    {
      std::lock_guard lock(mu_);
      auto it = index_.find(id);
      if (it != index_.end() && it->second.file_no == e.file_no) DropLocked(id, true);
    }
    if (err != ENOENT) Fail(path + ": " + std::strerror(err));
    return nullptr;
  }
  const size_t hlen = HeaderBytes(e.key);
  std::vector<uint8_t> head(hlen), sums(SumsBytes(e.data_len));
  auto obj = std::make_shared<store::Object>();
  obj->data.resize(e.data_len);
  std::vector<spill::IoOp> ops;
  AddOps(&ops, false, fd.get(), 0, head.data(), hlen);
  AddOps(&ops, false, fd.get(), hlen, reinterpret_cast<uint8_t*>(obj->data.data()), e.data_len);
  AddOps(&ops, false, fd.get(), hlen + e.data_len, sums.data(), sums.size());
  std::vector<int> res;
  const bool whole = RunOps(ops, &res);
  for (int r : res) {
    if (r < 0) {
      Fail(path + ": read: " + std::strerror(-r));
      return nullptr;
    }
  }
  store::LowerKey found;
  uint64_t found_len = 0;
  size_t found_hlen = 0;
  const bool ok = whole &&
                  DecodeHeader(head.data(), head.size(), &found, &found_len, &found_hlen).ok() &&
                  found == e.key && found_len == e.data_len &&
                  BadBlocks(obj->data.data(), obj->data.size(), sums.data()) == 0;
  c_.reads_bytes.fetch_add(hlen + e.data_len + sums.size(), std::memory_order_relaxed);
  if (!ok) {  // torn or flipped: never served; the caller reads LOWER
    c_.checksum_errors.fetch_add(1, std::memory_order_relaxed);
    log::Warn("disk tier: " + path + " (" + e.key.rel + ") failed its checksum; read from LOWER");
    std::lock_guard lock(mu_);
    auto it = index_.find(id);
    if (it != index_.end() && it->second.file_no == e.file_no) DropLocked(id, true);
    return nullptr;
  }
  obj->id = id;
  obj->version = v;
  obj->checksum = Checksum(obj->data.data(), obj->data.size());
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
  if (engine_ == nullptr || state() == State::kFailed || used_ + size > budget_ ||
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
    // The DEL first: a crash between the two leaves an orphan file (swept at
    // the next start), never an index entry without its file's identity.
    if (state() != State::kFailed) {
      if (Status s = journal_->Del(e.file_no); !s.ok()) log::Warn("disk tier: " + s.message());
      ::unlink(PathOf(e.file_no).c_str());
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
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
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
}

void DiskTier::WriteOne(Job& job) {
  const std::string path = PathOf(job.file_no);
  const std::vector<char>& data = job.obj->data;
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
  std::vector<uint8_t> head = EncodeHeader(job.key, data.size());
  std::vector<uint8_t> sums = EncodeSums(data.data(), data.size());
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  int err = fd.valid() ? 0 : errno;
  if (fd.valid()) {
    std::vector<spill::IoOp> ops;
    AddOps(&ops, true, fd.get(), 0, head.data(), head.size());
    AddOps(&ops, true, fd.get(), head.size(),
           reinterpret_cast<uint8_t*>(const_cast<char*>(data.data())), data.size());
    AddOps(&ops, true, fd.get(), head.size() + data.size(), sums.data(), sums.size());
    std::vector<int> res;
    if (!RunOps(ops, &res)) {
      err = EIO;
      for (int r : res) {
        if (r < 0) err = -r;
      }
    }
  }
  const uint64_t total = head.size() + data.size() + sums.size();
  std::unique_lock lock(mu_);
  if (err == 0 && still_wanted()) {
    Entry& e = index_[job.id];
    Status s = journal_->Put(JournalEntry{job.file_no, data.size(), job.key});
    if (s.ok()) {
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
    err = s.code() == Code::kNoSpace ? ENOSPC : EIO;
  }
  ::unlink(path.c_str());
  if (err == 0) return;  // erased while written: nothing lost
  c_.write_errors.fetch_add(1, std::memory_order_relaxed);
  if (still_wanted()) DropLocked(job.id, true);
  if (err == ENOSPC || err == EDQUOT) {
    Full();
  } else {
    lock.unlock();
    Fail(path + ": write: " + std::strerror(err));
  }
}

void DiskTier::Drain() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return (queue_.empty() && !writing_) || !writer_.joinable(); });
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
    s.index_bytes = journal_ ? journal_->bytes() : 0;
    s.writes_bytes = journal_ ? journal_->written() : 0;
  }
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
