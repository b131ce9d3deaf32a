// The read path answers once, whatever its post-reply work does: a READ of a
// whole object (DataView::Read) replies with the bytes and then tells the
// KernelHandover what the kernel was sent. A fault injected right after the
// reply (reply_test::after_send) throws out of that work; the callback guard
// must not answer the request a second time (callback_guard.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "callback_guard.h"
#include "data_view.h"
#include "epochfs/cache/policy.h"
#include "epochfs/store/cache_front.h"
#include "epochfs/store/lower.h"
#include "fs_common.h"
#include "kernel_handover.h"
#include "reply.h"

namespace epochfs::fs {
namespace read_reply_test_cases {

namespace stdfs = std::filesystem;

struct Sent {
  std::string what;
  int err = 0;
  size_t bytes = 0;
};
std::map<fuse_req_t, std::vector<Sent>> g_sent;
void CountingSink(fuse_req_t req, const char* what, int err, size_t bytes) {
  g_sent[req].push_back({what, err, bytes});
}
void ThrowAfterSend(fuse_req_t) { throw std::runtime_error("fault right after the reply"); }

constexpr size_t kFileBytes = 4096;

// One session's dataset view over a LOWER with one file, opened whole.
struct Session {
  std::string root;
  Config cfg;
  std::unique_ptr<store::Lower> lower;
  std::unique_ptr<store::CacheFront> cache;
  std::unique_ptr<InodeTable> inodes;
  HandleTable<OpenFile> files;
  HandleTable<OpenDir> dirs;
  std::unique_ptr<store::KnownLower> known;
  std::unique_ptr<FsContext> ctx;
  std::unique_ptr<KernelHandover> handover;
  Attributor attributor;
  DescriptorPool descriptors = DescriptorPool::ForLimit();
  std::unique_ptr<DataView> data;
  std::shared_ptr<OpenFile> file;

  Session() {
    char tmpl[] = "/tmp/epochfs-read-reply-XXXXXX";
    root = ::mkdtemp(tmpl);
    std::ofstream(root + "/a.bin", std::ios::binary) << std::string(kFileBytes, 'a');
    lower = std::move(store::Lower::Open(root)).value();
    cache = std::make_unique<store::CacheFront>(*lower, cache::MakeLruPolicy(1 << 20), 1 << 20);
    struct stat root_st {};
    ::stat(root.c_str(), &root_st);
    inodes = std::make_unique<InodeTable>(root_st, NodeKind::kLower, false);
    known = std::make_unique<store::KnownLower>(*lower, store::KnownLowerOptions{});
    ctx = std::make_unique<FsContext>(FsContext{cfg, *lower, *known, *cache, Role::kWhole,
                                                Timeouts::Of(cfg), *inodes, files,
                                                dirs});
    handover = std::make_unique<KernelHandover>(*ctx);
    data = std::make_unique<DataView>(*ctx, attributor, *handover, descriptors);
    struct stat st {};
    ::stat((root + "/a.bin").c_str(), &st);
    auto obj = cache->Get({store::ObjectIdOf("a.bin"), "a.bin", lower->versions().Of(st)});
    EXPECT_TRUE(obj.ok());
    file = std::make_shared<OpenFile>();
    file->kind = OpenFile::Kind::kObject;
    file->path = "a.bin";
    file->object = std::move(obj).value();
  }
  ~Session() { stdfs::remove_all(root); }
};

Session* g_session = nullptr;

// The READ callback as the op table has it, but with the open file given.
void ReadOp(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  g_session->data->Read(req, ino, g_session->file, size, off);
}

class ReadReplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_sent.clear();
    g_session = &session_;
    reply_test::sink = CountingSink;
  }
  void TearDown() override {
    reply_test::sink = nullptr;
    reply_test::after_send = nullptr;
    g_session = nullptr;
  }
  Session session_;
  char req_ = 0;
};

TEST_F(ReadReplyTest, WholeReadIsAnsweredOnceThenHandedOver) {
  auto read = Guard<&ReadOp>("read");
  auto* req = reinterpret_cast<fuse_req_t>(&req_);
  read(req, 2, kFileBytes, 0, nullptr);
  ASSERT_EQ(g_sent[req].size(), 1u);
  EXPECT_EQ(g_sent[req][0].what, "buf");
  EXPECT_EQ(g_sent[req][0].bytes, kFileBytes);
  // The post-reply work ran: the kernel was sent every byte (fuse.one_copy).
  EXPECT_EQ(session_.cache->counters().handovers, 1u);
}

TEST_F(ReadReplyTest, FaultAfterTheReplyDoesNotAnswerAgain) {
  reply_test::after_send = ThrowAfterSend;
  auto read = Guard<&ReadOp>("read");
  auto* req = reinterpret_cast<fuse_req_t>(&req_);
  read(req, 2, kFileBytes, 0, nullptr);
  ASSERT_EQ(g_sent[req].size(), 1u) << "a request answered twice";
  EXPECT_EQ(g_sent[req][0].what, "buf");
  EXPECT_EQ(g_sent[req][0].bytes, kFileBytes);
  // The fault cut the post-reply work short.
  EXPECT_EQ(session_.cache->counters().handovers, 0u);
}

}  // namespace read_reply_test_cases
}  // namespace epochfs::fs
