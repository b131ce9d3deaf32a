// The disk tier (src/tier/): the object file format, the journal (replay, a
// torn tail cut), and DiskTier itself on a real directory: copies written and
// read back verified, a flipped byte never served (counted, dropped, news), a
// stale version never served, the index replayed after a restart and rebuilt
// by a scan without it, orphans swept, a second opener refused, a copy that
// never answers failing the tier within its bound, and the RAM its index
// costs per cached object.
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "../spill/temp_dir.h"
#include "epochfs/common/hash.h"
#include "epochfs/tier/disk_format.h"
#include "epochfs/tier/disk_journal.h"
#include "epochfs/tier/disk_tier.h"

namespace epochfs::tier {
// Named, not anonymous: a unity build compiles this file with the others of its binary.
namespace disk_tier_test {

using spill::testing::TempDir;

store::LowerKey Key(const std::string& rel, uint64_t size, int64_t mtime = 7) {
  store::LowerKey k;
  k.rel = rel;
  k.version = store::Version{size, mtime, 11, 42};
  return k;
}

store::ObjectRef Obj(const store::LowerKey& k, uint64_t size, char seed) {
  auto o = std::make_shared<store::Object>();
  o->id = k.Id();
  o->data.resize(size);
  for (uint64_t i = 0; i < size; ++i) o->data[i] = static_cast<char>(seed + i * 31 + i / 7);
  return o;
}

store::Version V(const store::LowerKey& k) { return k.version; }

std::unique_ptr<DiskTier> OpenTier(const std::string& dir, uint64_t size = 64 << 20) {
  DiskTierOptions o;
  o.path = dir;
  o.size = size;
  auto t = DiskTier::Open(o);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return nullptr;
  std::unique_ptr<DiskTier> tier = std::move(t).value();
  EXPECT_TRUE(tier->Start().ok());
  return tier;
}

void FlipByte(const std::string& path, off_t at) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << path;
  char c = 0;
  ASSERT_EQ(::pread(fd, &c, 1, at), 1);
  c ^= 0x40;
  ASSERT_EQ(::pwrite(fd, &c, 1, at), 1);
  ::close(fd);
}

TEST(DiskFormat, HeaderRoundTripsAndRejectsDamage) {
  store::LowerKey k = Key("a/b/c.jpg", 123456, -5);
  k.offset = 4096;
  k.length = 8192;
  std::vector<uint8_t> h = EncodeHeader(k, 8000);
  ASSERT_EQ(h.size(), HeaderBytes(k));
  store::LowerKey back;
  uint64_t len = 0;
  size_t hlen = 0;
  ASSERT_TRUE(DecodeHeader(h.data(), h.size(), &back, &len, &hlen).ok());
  EXPECT_EQ(back, k);
  EXPECT_EQ(len, 8000u);
  EXPECT_EQ(hlen, h.size());
  for (size_t i : {size_t{0}, size_t{20}, h.size() - 1}) {
    std::vector<uint8_t> bad = h;
    bad[i] ^= 1;
    EXPECT_FALSE(DecodeHeader(bad.data(), bad.size(), &back, &len, &hlen).ok()) << i;
  }
  EXPECT_FALSE(DecodeHeader(h.data(), h.size() - 1, &back, &len, &hlen).ok());
}

TEST(DiskFormat, EveryBlockIsChecked) {
  std::vector<char> data(3 * kBlockBytes + 100);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 13);
  std::vector<uint8_t> sums = EncodeSums(data.data(), data.size());
  EXPECT_EQ(sums.size(), SumsBytes(data.size()));
  EXPECT_EQ(sums.size(), 4u * 8);
  EXPECT_EQ(BadBlocks(data.data(), data.size(), sums.data()), 0u);
  data[kBlockBytes + 5] ^= 1;
  data[data.size() - 1] ^= 1;
  EXPECT_EQ(BadBlocks(data.data(), data.size(), sums.data()), 2u);
}

// A read that verified every block takes the object's checksum from the
// sums (no second pass over the bytes): it must be the one a load from LOWER
// computes, or a refill of handed-over bytes would be refused; and any
// flipped byte changes both a block's sum and the object's checksum.
TEST(DiskFormat, TheSumsGiveTheObjectsChecksum) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{kBlockBytes - 1}, size_t{kBlockBytes},
                   size_t{kBlockBytes + 1}, size_t{200000}}) {
    std::vector<char> data(n);
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<char>(i * 7 + i / 300);
    const std::vector<uint8_t> sums = EncodeSums(data.data(), n);
    const uint64_t whole = store::ObjectChecksum(data.data(), n);
    EXPECT_EQ(store::ObjectChecksumOfSums(sums.data(), sums.size()), whole) << n;
    if (n == 0) continue;
    for (size_t at : {size_t{0}, n / 2, n - 1}) {
      data[at] ^= 0x20;
      EXPECT_EQ(BadBlocks(data.data(), n, sums.data()), 1u) << n << " at " << at;
      EXPECT_NE(store::ObjectChecksum(data.data(), n), whole) << n << " at " << at;
      data[at] ^= 0x20;
    }
  }
}

TEST(DiskJournal, ReplaysAndCutsATornTail) {
  TempDir dir("epochfs-tier-test");
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/index";
  std::vector<JournalEntry> live;
  EXPECT_EQ(Journal::Open(path, &live).status().code(), Code::kNotFound);
  {
    auto j = Journal::Create(path, {});
    ASSERT_TRUE(j.ok());
    ASSERT_TRUE(j.value()->Put({1, 10, Key("x", 10)}).ok());
    ASSERT_TRUE(j.value()->Put({2, 20, Key("y", 20)}).ok());
    ASSERT_TRUE(j.value()->Put({3, 30, Key("z", 30)}).ok());
    ASSERT_TRUE(j.value()->Del(2).ok());
  }
  auto j = Journal::Open(path, &live);
  ASSERT_TRUE(j.ok());
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0].key.rel, "x");
  EXPECT_EQ(live[1].key.rel, "z");
  EXPECT_EQ(live[1].data_len, 30u);
  const uint64_t good = j.value()->bytes();
  ASSERT_TRUE(j.value()->Put({4, 40, Key("w", 40)}).ok());
  j = Status::Ok();  // closed
  // A torn append (a kill during the write): the last record cut short.
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(good + 10)), 0);
  j = Journal::Open(path, &live);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(live.size(), 2u);
  EXPECT_EQ(j.value()->bytes(), good);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), good) << "the torn tail is cut";
  // A flipped byte in a record (the last, the DEL): replay stops before it,
  // so "y" is back (its file gone, a read of it finds none and drops it).
  FlipByte(path, static_cast<off_t>(good - 3));
  EXPECT_TRUE(Journal::Open(path, &live).ok());
  EXPECT_EQ(live.size(), 3u);
  // Not a journal at all.
  FlipByte(path, 0);
  EXPECT_EQ(Journal::Open(path, &live).status().code(), Code::kCorruption);
}

TEST(DiskTier, WritesReadsVerifiesAndSurvivesARestart) {
  TempDir dir("epochfs-tier-test");
  ASSERT_FALSE(dir.path().empty());
  const store::LowerKey a = Key("cls/a.jpg", 200000), b = Key("cls/b.jpg", 1000);
  store::LowerKey blk = Key("big.tar", 1 << 30);
  blk.offset = 4 << 20;
  blk.length = 4 << 20;
  const store::ObjectRef oa = Obj(a, 200000, 1), ob = Obj(b, 1000, 2), ok = Obj(blk, 70000, 3);
  {
    std::unique_ptr<DiskTier> t = OpenTier(dir.path());
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->Read(a.Id(), a, V(a)), nullptr);
    ASSERT_TRUE(t->Write(a.Id(), a, oa));
    ASSERT_TRUE(t->Write(b.Id(), b, ob));
    ASSERT_TRUE(t->Write(blk.Id(), blk, ok));
    t->Drain();
    const store::TierStats s = t->stats();
    EXPECT_EQ(s.objects, 3u);
    EXPECT_EQ(s.bytes, 200000u + 1000 + 70000);
    EXPECT_EQ(s.writes, 3u);
    store::ObjectRef back = t->Read(a.Id(), a, V(a));
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(back->data, oa->data);
    EXPECT_EQ(back->version, V(a));
    EXPECT_EQ(back->checksum, store::ObjectChecksum(oa->data.data(), oa->data.size()));
    EXPECT_EQ(t->stats().hits, 1u);
    // The file's mode: the daemon's alone.
    struct stat st;
    ASSERT_EQ(::stat(t->FileOf(a.Id()).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    t->TakeNews();
  }
  // Restart: the journal brings every copy back, and the news names them.
  std::unique_ptr<DiskTier> t = OpenTier(dir.path());
  ASSERT_NE(t, nullptr);
  store::TierNews news = t->TakeNews();
  EXPECT_EQ(news.found.size(), 3u);
  for (const auto& f : news.found) {
    if (f.id == blk.Id()) {
      EXPECT_EQ(f.file, store::ObjectIdOf("big.tar"));
    }
  }
  store::ObjectRef back = t->Read(blk.Id(), blk, V(blk));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->data, ok->data);
  EXPECT_EQ(back->checksum, store::ObjectChecksum(ok->data.data(), ok->data.size()));
  // Another version on LOWER now: never served, dropped, counted.
  store::LowerKey newer = b;
  newer.version.mtime_ns += 1;
  EXPECT_EQ(t->Read(b.Id(), newer, V(newer)), nullptr);
  EXPECT_EQ(t->stats().stale, 1u);
  EXPECT_EQ(t->stats().objects, 2u);
  EXPECT_EQ(t->Read(b.Id(), b, V(b)), nullptr) << "dropped";
  // A flipped byte in the data: never served, counted, the placement told.
  const std::string fa = t->FileOf(a.Id());
  ASSERT_FALSE(fa.empty());
  FlipByte(fa, static_cast<off_t>(HeaderBytes(a) + 150000));
  EXPECT_EQ(t->Read(a.Id(), a, V(a)), nullptr);
  EXPECT_EQ(t->stats().checksum_errors, 1u);
  EXPECT_TRUE(t->HasNews());
  news = t->TakeNews();
  EXPECT_NE(std::find(news.lost.begin(), news.lost.end(), a.Id()), news.lost.end());
  EXPECT_NE(std::find(news.lost.begin(), news.lost.end(), b.Id()), news.lost.end());
  t->Drain();  // removals are the writer's
  EXPECT_EQ(::access(fa.c_str(), F_OK), -1) << "its file is removed";
  EXPECT_EQ(t->state(), DiskTier::State::kOk);
  // A flipped byte in the last, short block: never served either.
  {
    const std::string fb = t->FileOf(blk.Id());
    ASSERT_FALSE(fb.empty());
    const store::ObjectRef keep = t->Read(blk.Id(), blk, V(blk));
    ASSERT_NE(keep, nullptr);
    FlipByte(fb, static_cast<off_t>(HeaderBytes(blk) + 70000 - 1));
    EXPECT_EQ(t->Read(blk.Id(), blk, V(blk)), nullptr);
    EXPECT_EQ(t->stats().checksum_errors, 2u);
    EXPECT_TRUE(t->Write(blk.Id(), blk, ok));  // written again for the erase below
    t->Drain();
  }
  // Erase removes the copy.
  const std::string fk = t->FileOf(blk.Id());
  t->Erase(blk.Id());
  t->Drain();
  EXPECT_EQ(::access(fk.c_str(), F_OK), -1);
  EXPECT_EQ(t->stats().objects, 0u);
}

TEST(DiskTier, WithoutItsIndexTheDirectoryIsScannedAndOrphansSwept) {
  TempDir dir("epochfs-tier-test");
  ASSERT_FALSE(dir.path().empty());
  const store::LowerKey a = Key("a", 5000), b = Key("b", 6000);
  std::string fb;
  {
    std::unique_ptr<DiskTier> t = OpenTier(dir.path());
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->Write(a.Id(), a, Obj(a, 5000, 1)));
    ASSERT_TRUE(t->Write(b.Id(), b, Obj(b, 6000, 2)));
    t->Drain();
    fb = t->FileOf(b.Id());
  }
  // A cut copy (a torn write found by the scan) and a stray file.
  ASSERT_EQ(::truncate(fb.c_str(), 100), 0);
  const std::string stray = dir.path() + "/data/07/0000000000000999";
  FILE* f = std::fopen(stray.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("junk", f);
  std::fclose(f);
  ASSERT_EQ(::unlink((dir.path() + "/index").c_str()), 0);
  std::unique_ptr<DiskTier> t = OpenTier(dir.path());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->stats().objects, 1u);
  store::ObjectRef back = t->Read(a.Id(), a, V(a));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->data, Obj(a, 5000, 1)->data);
  EXPECT_EQ(t->Read(b.Id(), b, V(b)), nullptr);
  EXPECT_EQ(::access(stray.c_str(), F_OK), -1);
  EXPECT_EQ(::access((dir.path() + "/index").c_str(), F_OK), 0) << "written anew";
}

TEST(DiskTier, ASecondOpenerIsRefusedAndAMissingDirectoryNamed) {
  TempDir dir("epochfs-tier-test");
  ASSERT_FALSE(dir.path().empty());
  std::unique_ptr<DiskTier> t = OpenTier(dir.path());
  ASSERT_NE(t, nullptr);
  DiskTierOptions o;
  o.path = dir.path();
  o.size = 1 << 20;
  auto second = DiskTier::Open(o);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kBusy);
  EXPECT_NE(second.status().message().find("in use by another epochfs daemon (pid " +
                                           std::to_string(::getpid()) + ")"),
            std::string::npos)
      << second.status().message();
  o.path = dir.path() + "/missing";
  auto missing = DiskTier::Open(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cache.disk_path " + o.path), std::string::npos);
}

TEST(DiskTier, WritesBeyondTheBudgetAreRefusedAsLost) {
  TempDir dir("epochfs-tier-test");
  ASSERT_FALSE(dir.path().empty());
  std::unique_ptr<DiskTier> t = OpenTier(dir.path(), 10000);
  ASSERT_NE(t, nullptr);
  const store::LowerKey a = Key("a", 8000), b = Key("b", 8000);
  EXPECT_TRUE(t->Write(a.Id(), a, Obj(a, 8000, 1)));
  EXPECT_FALSE(t->Write(b.Id(), b, Obj(b, 8000, 2)));
  t->Drain();
  const store::TierNews news = t->TakeNews();
  EXPECT_EQ(news.lost, std::vector<cache::ObjectId>{b.Id()});
  EXPECT_EQ(t->stats().bytes, 8000u);
}

// The RAM the index costs per cached object, measured: the heap grows by
// about EntryBytes(path) per object (docs/disk_tier.md states the figure).
// A disk that stops answering, without a hung filesystem: a copy's file
// replaced by a FIFO whose writer (the test) writes nothing, so that its read
// can never be answered in time.
TEST(DiskTier, ACopyThatNeverAnswersFailsTheTierWithinTheBound) {
  TempDir dir("epochfs-tier-test");
  ASSERT_FALSE(dir.path().empty());
  DiskTierOptions o;
  o.path = dir.path();
  o.size = 64 << 20;
  o.timeout = std::chrono::milliseconds(100);
  auto opened = DiskTier::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  std::unique_ptr<DiskTier> t = std::move(opened).value();
  ASSERT_TRUE(t->Start().ok());
  const store::LowerKey a = Key("a", 5000), b = Key("b", 6000);
  ASSERT_TRUE(t->Write(a.Id(), a, Obj(a, 5000, 1)));
  ASSERT_TRUE(t->Write(b.Id(), b, Obj(b, 6000, 2)));
  t->Drain();
  const std::string fa = t->FileOf(a.Id());
  ASSERT_FALSE(fa.empty());
  ASSERT_EQ(::unlink(fa.c_str()), 0);
  ASSERT_EQ(::mkfifo(fa.c_str(), 0600), 0);
  const int w = ::open(fa.c_str(), O_RDWR | O_CLOEXEC);  // a writer that writes nothing
  ASSERT_GE(w, 0);
  EXPECT_EQ(t->Read(a.Id(), a, V(a)), nullptr);
  EXPECT_EQ(t->state(), DiskTier::State::kFailed);
  EXPECT_EQ(t->stats().state, "failed");
  EXPECT_EQ(t->stats().budget, 0u);
  // Failed, the tier calls its disk no more: b's sound copy is not served.
  EXPECT_EQ(t->Read(b.Id(), b, V(b)), nullptr);
  EXPECT_EQ(t->stats().hits, 0u);
  EXPECT_FALSE(t->Write(Key("c", 10).Id(), Key("c", 10), Obj(Key("c", 10), 10, 3)));
  // A call was given up on: Stop says so (its files are left as they are).
  EXPECT_FALSE(t->Stop());
  // The disk answers at last; the tier can go.
  std::vector<char> junk(8000, 'x');
  ASSERT_EQ(::write(w, junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
  t.reset();
  ::close(w);
}

// The key's version is VersionRule's, compared whole: a copy differs from the
// file LOWER holds now in its ctime alone (a copy renamed over it with the
// same size and mtime) or its inode number alone (where LOWER keeps them).
TEST(LowerKey, MatchesOnlyTheWholeVersion) {
  const store::LowerKey k = Key("a", 100);
  EXPECT_TRUE(k.Matches(store::Version{100, 7, 11, 42}));
  EXPECT_FALSE(k.Matches(store::Version{101, 7, 11, 42}));
  EXPECT_FALSE(k.Matches(store::Version{100, 8, 11, 42}));
  EXPECT_FALSE(k.Matches(store::Version{100, 7, 12, 42})) << "ctime";
  EXPECT_FALSE(k.Matches(store::Version{100, 7, 11, 43})) << "inode";
}

// A file on disk replaced by a copy with its bytes changed, its size and its
// mtime (to the nanosecond) kept, renamed over it (`cp -p`, `rsync -t`):
// its old copy in the tier is stale, under the rule with inode numbers and
// under the one without (a FUSE LOWER): the ctime tells.
TEST(DiskTier, ACopyRenamedOverWithTheSameSizeAndMtimeIsStale) {
  TempDir dir("epochfs-tier-test");
  ASSERT_FALSE(dir.path().empty());
  ASSERT_EQ(::mkdir((dir.path() + "/lower").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir.path() + "/tier").c_str(), 0700), 0);
  const std::string file = dir.path() + "/lower/f", copy = file + ".new";
  auto write = [](const std::string& path, char c) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    const std::string bytes(5000, c);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    ASSERT_EQ(std::fclose(f), 0);
  };
  write(file, 'a');
  struct stat old_st;
  ASSERT_EQ(::stat(file.c_str(), &old_st), 0);
  write(copy, 'b');
  // The copy's times set to the old file's until its ctime (the time of the
  // last change, on a clock of coarse ticks) is past the old file's.
  struct stat new_st;
  for (int i = 0; i < 100000; ++i) {
    const struct timespec times[2] = {old_st.st_atim, old_st.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, copy.c_str(), times, 0), 0);
    ASSERT_EQ(::stat(copy.c_str(), &new_st), 0);
    if (new_st.st_ctim.tv_sec != old_st.st_ctim.tv_sec ||
        new_st.st_ctim.tv_nsec != old_st.st_ctim.tv_nsec) {
      break;
    }
    ::usleep(100);
  }
  ASSERT_EQ(::rename(copy.c_str(), file.c_str()), 0);
  ASSERT_EQ(::stat(file.c_str(), &new_st), 0);
  for (bool stable_inodes : {true, false}) {
    const store::VersionRule rule(stable_inodes);
    const store::Version was = rule.Of(old_st), now = rule.Of(new_st);
    ASSERT_EQ(now.size, was.size);
    ASSERT_EQ(now.mtime_ns, was.mtime_ns);
    store::LowerKey k;
    k.rel = "f";
    k.version = was;
    std::unique_ptr<DiskTier> t = OpenTier(dir.path() + "/tier");
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->Write(k.Id(), k, Obj(k, 5000, 'a')));
    t->Drain();
    ASSERT_NE(t->Read(k.Id(), k, was), nullptr) << "the version it copied";
    store::LowerKey asked = k;
    asked.version = now;
    EXPECT_EQ(t->Read(k.Id(), asked, now), nullptr) << stable_inodes;
    EXPECT_EQ(t->stats().stale, 1u);
    EXPECT_EQ(t->stats().objects, 0u) << "dropped";
    EXPECT_EQ(t->Read(k.Id(), k, was), nullptr) << "gone";
  }
}

// An index written before the key had the ctime and inode number (format 1):
// none of its copies is served, nor announced; the start says so, the
// journal is written anew in this format and the writer sweeps their files.
TEST(DiskTier, AnIndexOfTheFormerFormatIsDroppedCleanly) {
  TempDir dir("epochfs-tier-test");
  ASSERT_FALSE(dir.path().empty());
  const std::string index = dir.path() + "/index";
  {  // "EPFSDTJ1", format 1, 64 KiB blocks; one PUT of file 5 ("a", 10 bytes)
    std::vector<uint8_t> out = {'E', 'P', 'F', 'S', 'D', 'T', 'J', '1'};
    PutU32(&out, 1);
    PutU32(&out, kBlockBytes);
    std::vector<uint8_t> body = {1};
    for (uint64_t v : {5, 10, 0, 0, 10, 7}) PutU64(&body, v);
    body.push_back('a');
    PutU32(&out, static_cast<uint32_t>(body.size()));
    out.insert(out.end(), body.begin(), body.end());
    PutU64(&out, Checksum(body.data(), body.size()));
    FILE* f = std::fopen(index.c_str(), "w");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(out.data(), 1, out.size(), f), out.size());
    ASSERT_EQ(std::fclose(f), 0);
  }
  std::vector<JournalEntry> live;
  uint32_t format = 0;
  ASSERT_TRUE(Journal::Open(index, &live, nullptr, &format).ok());
  EXPECT_EQ(format, 1u);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].file_no, 5u);
  EXPECT_EQ(live[0].key.rel, "a");
  EXPECT_EQ(live[0].key.version, (store::Version{10, 7, 0, 0}));
  ASSERT_EQ(::mkdir((dir.path() + "/data").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir.path() + "/data/05").c_str(), 0700), 0);
  const std::string old_file = dir.path() + "/data/05/0000000000000005";
  FILE* f = std::fopen(old_file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("old format", f);
  std::fclose(f);
  std::unique_ptr<DiskTier> t = OpenTier(dir.path());
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->TakeNews().found.empty());
  EXPECT_EQ(t->stats().objects, 0u);
  const store::LowerKey a = Key("a", 10);
  EXPECT_EQ(t->Read(a.Id(), a, V(a)), nullptr);
  // A copy written now does not take the old file's number.
  ASSERT_TRUE(t->Write(a.Id(), a, Obj(a, 10, 1)));
  t->Drain();
  const std::string fresh = t->FileOf(a.Id());
  EXPECT_NE(fresh, old_file);
  EXPECT_TRUE(t->Stop());  // the writer (its sweep first) has returned
  EXPECT_EQ(::access(old_file.c_str(), F_OK), -1) << "swept";
  EXPECT_EQ(::access(fresh.c_str(), F_OK), 0);
  live.clear();
  ASSERT_TRUE(Journal::Open(index, &live, nullptr, &format).ok());
  EXPECT_EQ(format, Journal::kFormat);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].key, a);
}

TEST(DiskTier, IndexBytesPerObject) {
  TempDir dir("epochfs-tier-test");
  ASSERT_FALSE(dir.path().empty());
  constexpr int kN = 20000;
  const std::string prefix = "train/n01440764/n01440764_";  // an ImageNet-like path
  {
    std::vector<JournalEntry> live;
    for (int i = 0; i < kN; ++i) {
      live.push_back({static_cast<uint64_t>(i + 1), 1000, Key(prefix + std::to_string(i) + ".JPEG", 1000)});
    }
    ASSERT_TRUE(Journal::Create(dir.path() + "/index", live).ok());
  }
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator is not seen by mallinfo2";
#endif
  DiskTierOptions o;
  o.path = dir.path();
  o.size = 1ull << 40;
  const size_t before = mallinfo2().uordblks;
  auto t = DiskTier::Open(o);
  ASSERT_TRUE(t.ok());
  t.value()->TakeNews();  // the found list is transient
  const size_t after = mallinfo2().uordblks;
  const double per = double(after - before) / kN;
  const size_t path_len = prefix.size() + 10;
  std::printf("disk tier index: %.0f bytes of RAM per cached object (path %zu bytes; estimate %zu)\n",
              per, path_len, DiskTier::EntryBytes(path_len));
  EXPECT_EQ(t.value()->stats().objects, static_cast<uint64_t>(kN));
  EXPECT_LT(per, 250.0);
  EXPECT_GT(per, 100.0);
}

}  // namespace disk_tier_test
}  // namespace epochfs::tier
