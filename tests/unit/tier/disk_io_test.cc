// DiskIo (src/tier/disk_io.cc): calls through io_uring that are waited for at
// most a bound. A FIFO stands for a disk that stops answering: a read of it
// blocks until its writer (the test) writes, so a call given up on is
// certain, not a matter of timing.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../spill/temp_dir.h"
#include "epochfs/tier/disk_io.h"

namespace epochfs::tier {
// Named, not anonymous: a unity build compiles this file with the others of its binary.
namespace disk_io_test {

using namespace std::chrono_literals;
using spill::testing::TempDir;

TEST(DiskIo, WritesAndReadsBackWhole) {
  TempDir dir("epochfs-diskio-test");
  ASSERT_FALSE(dir.path().empty());
  auto io = DiskIo::Create(4, 10s);
  ASSERT_TRUE(io.ok()) << io.status().message();
  const std::string path = dir.path() + "/f";
  const int fd = io.value()->Open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  auto out = std::make_shared<std::vector<uint8_t>>(100000);
  for (size_t i = 0; i < out->size(); ++i) (*out)[i] = static_cast<uint8_t>(i * 7);
  EXPECT_EQ(io.value()->Transfer(true, fd, {{0, out->data(), 60000}, {60000, out->data() + 60000, 40000}}, out), 0);
  auto in = std::make_shared<std::vector<uint8_t>>(100000);
  EXPECT_EQ(io.value()->Transfer(false, fd, {{0, in->data(), in->size()}}, in), 0);
  EXPECT_EQ(*in, *out);
  // Past the end: short, told apart from an error.
  EXPECT_EQ(io.value()->Transfer(false, fd, {{50000, in->data(), in->size()}}, in), DiskIo::kShort);
  io.value()->Close(fd);
  EXPECT_EQ(io.value()->Open(dir.path() + "/missing", O_RDONLY, 0), -ENOENT);
  EXPECT_FALSE(io.value()->hung());
}

TEST(DiskIo, ACallNotAnsweredWithinTheBoundIsGivenUpOn) {
  TempDir dir("epochfs-diskio-test");
  ASSERT_FALSE(dir.path().empty());
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int r = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(r, 0);
  const int w = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(w, 0);
  ASSERT_EQ(::fcntl(r, F_SETFL, 0), 0);  // blocking reads
  auto io = DiskIo::Create(4, 100ms);
  ASSERT_TRUE(io.ok()) << io.status().message();
  // A writer is there but writes nothing: the read waits for ever.
  auto buf = std::make_shared<std::vector<uint8_t>>(16);
  EXPECT_EQ(io.value()->Transfer(false, r, {{0, buf->data(), buf->size()}}, buf),
            DiskIo::kNoAnswer);
  EXPECT_TRUE(io.value()->hung());
  // Answered late: the buffer the call owns is still alive when the bytes
  // land (the caller's reference is gone).
  buf.reset();
  ASSERT_EQ(::write(w, "0123456789abcdef", 16), 16);
  ::close(w);
  // Hung once, the engine is left to the process rather than waited for.
  io.value().reset();
  ::close(r);
}

TEST(DiskIo, AFileIsReadWhole) {
  TempDir dir("epochfs-diskio-test");
  ASSERT_FALSE(dir.path().empty());
  auto io = DiskIo::Create(4, 10s);
  ASSERT_TRUE(io.ok()) << io.status().message();
  const std::string path = dir.path() + "/f";
  std::vector<uint8_t> want(200000);
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 13 + 5);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, want.data(), want.size()), static_cast<ssize_t>(want.size()));
  ::close(fd);
  // Three ranges one after another, as an object file's header, data and
  // sums (one vectored op); read many times over.
  for (int round = 0; round < 50; ++round) {
    auto head = std::make_shared<std::vector<uint8_t>>(77);
    auto body = std::make_shared<std::vector<uint8_t>>(150000);
    auto tail = std::make_shared<std::vector<uint8_t>>(want.size() - 150077);
    const DiskIo::FileRead r = io.value()->ReadFile(
        path, O_RDONLY | O_CLOEXEC,
        {{0, head->data(), head->size()},
         {77, body->data(), body->size()},
         {150077, tail->data(), tail->size()}},
        body);
    ASSERT_FALSE(r.open_failed);
    ASSERT_EQ(r.result, 0);
    std::vector<uint8_t> got(*head);
    got.insert(got.end(), body->begin(), body->end());
    got.insert(got.end(), tail->begin(), tail->end());
    ASSERT_EQ(got, want) << "round " << round;
  }
  // Past the end: short. A missing file: the open's error, told apart.
  auto buf = std::make_shared<std::vector<uint8_t>>(1000);
  DiskIo::FileRead r =
      io.value()->ReadFile(path, O_RDONLY, {{want.size() - 10, buf->data(), buf->size()}}, buf);
  EXPECT_FALSE(r.open_failed);
  EXPECT_EQ(r.result, DiskIo::kShort);
  r = io.value()->ReadFile(dir.path() + "/missing", O_RDONLY, {{0, buf->data(), buf->size()}}, buf);
  EXPECT_TRUE(r.open_failed);
  EXPECT_EQ(r.result, -ENOENT);
  // Ranges with a gap between them: read as separate ops, the same bytes.
  auto a = std::make_shared<std::vector<uint8_t>>(10);
  r = io.value()->ReadFile(path, O_RDONLY, {{0, a->data(), 5}, {100, a->data() + 5, 5}}, a);
  EXPECT_EQ(r.result, 0);
  EXPECT_TRUE(std::equal(a->begin(), a->begin() + 5, want.begin()));
  EXPECT_TRUE(std::equal(a->begin() + 5, a->end(), want.begin() + 100));
  EXPECT_FALSE(io.value()->hung());
}

TEST(DiskIo, AWholeReadNotAnsweredWithinTheBoundIsGivenUpOn) {
  TempDir dir("epochfs-diskio-test");
  ASSERT_FALSE(dir.path().empty());
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int w = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);  // a writer that writes nothing
  ASSERT_GE(w, 0);
  auto io = DiskIo::Create(4, 100ms);
  ASSERT_TRUE(io.ok()) << io.status().message();
  auto buf = std::make_shared<std::vector<uint8_t>>(16);
  const DiskIo::FileRead r =
      io.value()->ReadFile(fifo, O_RDONLY, {{0, buf->data(), buf->size()}}, buf);
  EXPECT_EQ(r.result, DiskIo::kNoAnswer);
  EXPECT_TRUE(io.value()->hung());
  // Answered late: the buffer the read owns is still alive when the bytes land.
  buf.reset();
  ASSERT_EQ(::write(w, "0123456789abcdef", 16), 16);
  io.value().reset();
  ::close(w);
}

}  // namespace disk_io_test
}  // namespace epochfs::tier
