#include "epochfs/tier/disk_journal.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "epochfs/common/hash.h"
#include "epochfs/tier/disk_format.h"

namespace epochfs::tier {
namespace {

constexpr char kJournalMagic[8] = {'E', 'P', 'F', 'S', 'D', 'T', 'J', '1'};
constexpr size_t kHead = 16;
constexpr uint8_t kPut = 1, kDel = 2;
// A PUT's fixed part (kind and integers) in each format.
constexpr size_t kPutFixed1 = 1 + 6 * 8, kPutFixed = 1 + 8 * 8;

std::vector<uint8_t> Head(uint32_t format = Journal::kFormat) {
  std::vector<uint8_t> h(kJournalMagic, kJournalMagic + 8);
  PutU32(&h, format);
  PutU32(&h, kBlockBytes);
  return h;
}

std::vector<uint8_t> PutBody(const JournalEntry& e) {
  std::vector<uint8_t> b{kPut};
  const store::Version& v = e.key.version;
  for (uint64_t x : {e.file_no, e.data_len, e.key.offset, e.key.length, v.size,
                     static_cast<uint64_t>(v.mtime_ns), static_cast<uint64_t>(v.ctime_ns), v.ino}) {
    PutU64(&b, x);
  }
  b.insert(b.end(), e.key.rel.begin(), e.key.rel.end());
  return b;
}

std::vector<uint8_t> Record(const std::vector<uint8_t>& body) {
  std::vector<uint8_t> r;
  r.reserve(body.size() + 12);
  PutU32(&r, static_cast<uint32_t>(body.size()));
  r.insert(r.end(), body.begin(), body.end());
  PutU64(&r, Checksum(body.data(), body.size()));
  return r;
}

Status WriteAll(int fd, const std::vector<uint8_t>& bytes, const std::string& what) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno == ENOSPC ? Code::kNoSpace : Code::kIoError, errno, what);
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& path,
                                               std::vector<JournalEntry>* live,
                                               CallWatch* watch, uint32_t* format) {
  UniqueFd owned;
  std::vector<uint8_t> all;
  {
    CallWatch::Scope call(watch);  // the reads; the replay below is CPU work
    int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      return ErrnoStatus(errno == ENOENT ? Code::kNotFound : Code::kIoError, errno, path);
    }
    owned.reset(fd);
    struct stat st;
    if (::fstat(fd, &st) != 0) return ErrnoStatus(Code::kIoError, errno, path);
    all.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < all.size()) {
      ssize_t n = ::pread(fd, all.data() + got, all.size() - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoStatus(Code::kIoError, errno, path);
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    all.resize(got);
  }
  // This format, or format 1 (its PUTs without ctime and inode number).
  const uint32_t found = all.size() >= kHead ? GetU32(&all[8]) : 0;
  const std::vector<uint8_t> head = Head(found == 1 ? 1 : kFormat);
  if (all.size() < kHead || std::memcmp(all.data(), head.data(), kHead) != 0) {
    return Corruption(path + ": not a disk tier index");
  }
  if (format != nullptr) *format = found;
  const size_t put_fixed = found == 1 ? kPutFixed1 : kPutFixed;
  // file_no → place in *live; replay in order.
  std::vector<JournalEntry> entries;
  std::unordered_map<uint64_t, size_t> at;
  // At most this many records (each at least its length, a PUT's fixed part
  // and its sum): reserved, so that a journal of a million is not rehashed.
  const size_t most = all.size() / (4 + kPutFixed1 + 8);
  entries.reserve(most);
  at.reserve(most);
  uint64_t dead = 0;
  size_t pos = kHead;
  while (pos + 4 <= all.size()) {
    const uint32_t len = GetU32(&all[pos]);
    if (len == 0 || pos + 4 + len + 8 > all.size()) break;
    const uint8_t* body = &all[pos + 4];
    if (GetU64(body + len) != Checksum(body, len)) break;
    if (body[0] == kPut && len >= put_fixed) {
      JournalEntry e;
      e.file_no = GetU64(body + 1);
      e.data_len = GetU64(body + 9);
      e.key.offset = GetU64(body + 17);
      e.key.length = GetU64(body + 25);
      e.key.version.size = GetU64(body + 33);
      e.key.version.mtime_ns = static_cast<int64_t>(GetU64(body + 41));
      if (put_fixed == kPutFixed) {
        e.key.version.ctime_ns = static_cast<int64_t>(GetU64(body + 49));
        e.key.version.ino = GetU64(body + 57);
      }
      e.key.rel.assign(reinterpret_cast<const char*>(body + put_fixed), len - put_fixed);
      at[e.file_no] = entries.size();
      entries.push_back(std::move(e));
    } else if (body[0] == kDel && len == 9) {
      auto it = at.find(GetU64(body + 1));
      if (it != at.end()) {
        entries[it->second].file_no = 0;  // dead
        at.erase(it);
      }
      dead += 2;
    } else {
      break;
    }
    pos += 4 + len + 8;
  }
  if (pos != all.size()) {
    // A torn or foreign tail: cut it, so that appends follow the last good record.
    CallWatch::Scope call(watch);
    if (::ftruncate(owned.get(), static_cast<off_t>(pos)) != 0) {
      return ErrnoStatus(Code::kIoError, errno, path);
    }
  }
  live->clear();
  live->reserve(at.size());
  for (JournalEntry& e : entries) {
    if (e.file_no != 0) live->push_back(std::move(e));
  }
  std::unique_ptr<Journal> j(new Journal(std::move(owned), pos));
  j->dead_ = dead;
  return j;
}

Result<std::unique_ptr<Journal>> Journal::Create(const std::string& path,
                                                 const std::vector<JournalEntry>& live,
                                                 CallWatch* watch) {
  const std::string tmp = path + ".new";
  std::vector<uint8_t> out = Head();
  for (const JournalEntry& e : live) {
    const std::vector<uint8_t> r = Record(PutBody(e));
    out.insert(out.end(), r.begin(), r.end());
  }
  CallWatch::Scope call(watch);  // the writes
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return ErrnoStatus(Code::kIoError, errno, tmp);
  UniqueFd owned(fd);
  if (Status s = WriteAll(fd, out, tmp); !s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  if (::fsync(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = ErrnoStatus(Code::kIoError, errno, path);
    ::unlink(tmp.c_str());
    return s;
  }
  std::unique_ptr<Journal> j(new Journal(std::move(owned), out.size()));
  j->written_ = out.size();
  return j;
}

Status Journal::Append(const std::vector<uint8_t>& body) {
  const std::vector<uint8_t> r = Record(body);
  if (Status s = WriteAll(fd_.get(), r, "disk tier index"); !s.ok()) {
    // No torn record left behind: the next append follows the last good one.
    [[maybe_unused]] int rc = ::ftruncate(fd_.get(), static_cast<off_t>(bytes_));
    return s;
  }
  bytes_ += r.size();
  written_ += r.size();
  return Status::Ok();
}

Status Journal::Put(const JournalEntry& e) { return Append(PutBody(e)); }

Status Journal::Del(uint64_t file_no) {
  std::vector<uint8_t> b{kDel};
  PutU64(&b, file_no);
  Status s = Append(b);
  if (s.ok()) dead_ += 2;
  return s;
}

}  // namespace epochfs::tier
