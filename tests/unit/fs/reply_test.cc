// Exactly one answer per FUSE request (src/fs/reply.h, callback_guard.h):
// the guard answers EIO only a request that has no answer yet, so work that
// runs after a callback's reply (the read path's kernel-page bookkeeping)
// may throw without a second answer going out.
#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "callback_guard.h"
#include "reply.h"

namespace epochfs::fs {
namespace reply_test_cases {

// What was answered, per request (the fake requests are addresses of these).
struct Sent {
  std::string what;
  int err = 0;
  size_t bytes = 0;
};
std::map<fuse_req_t, std::vector<Sent>>* g_sent = nullptr;

void CountingSink(fuse_req_t req, const char* what, int err, size_t bytes) {
  (*g_sent)[req].push_back({what, err, bytes});
}

// The fault hook: throws right after an answer (as post-reply work can).
void ThrowAfterSend(fuse_req_t) { throw std::runtime_error("fault after reply"); }

class ReplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_sent = &sent_;
    reply_test::sink = CountingSink;
  }
  void TearDown() override {
    reply_test::sink = nullptr;
    reply_test::after_send = nullptr;
    g_sent = nullptr;
  }
  static fuse_req_t Req(int i) { return reinterpret_cast<fuse_req_t>(&slots_[i]); }
  std::map<fuse_req_t, std::vector<Sent>> sent_;
  static inline char slots_[8];
};

// A READ: answers with the bytes, then does its bookkeeping, which throws.
void ReadThenThrow(fuse_req_t req, fuse_ino_t, size_t size, off_t, fuse_file_info*) {
  static const char data[16] = "0123456789abcde";
  reply::Buf(req, data, size);
  throw std::runtime_error("bookkeeping after the reply");
}

// A READ whose reply is followed by the fault hook (it throws in the reply).
void ReadWithHook(fuse_req_t req, fuse_ino_t, size_t size, off_t, fuse_file_info*) {
  static const char data[16] = "0123456789abcde";
  reply::Buf(req, data, size);
}

void ThrowBeforeReply(fuse_req_t, fuse_ino_t, size_t, off_t, fuse_file_info*) {
  throw std::runtime_error("before the reply");
}

void ForgetThenThrow(fuse_req_t req, fuse_ino_t, uint64_t) {
  reply::None(req);
  throw std::bad_alloc();
}

TEST_F(ReplyTest, ThrowAfterReplySendsOneAnswer) {
  auto read = Guard<&ReadThenThrow>("read");
  read(Req(0), 1, 4, 0, nullptr);
  ASSERT_EQ(sent_[Req(0)].size(), 1u);
  EXPECT_EQ(sent_[Req(0)][0].what, "buf");
}

TEST_F(ReplyTest, FaultHookAfterReadReplySendsOneAnswer) {
  reply_test::after_send = ThrowAfterSend;
  auto read = Guard<&ReadWithHook>("read");
  for (int i = 0; i < 4; ++i) read(Req(i), 1, 4, 0, nullptr);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(sent_[Req(i)].size(), 1u) << "request " << i;
    EXPECT_EQ(sent_[Req(i)][0].what, "buf");
  }
}

TEST_F(ReplyTest, ThrowBeforeReplyAnswersEio) {
  auto read = Guard<&ThrowBeforeReply>("read");
  read(Req(1), 1, 4, 0, nullptr);
  ASSERT_EQ(sent_[Req(1)].size(), 1u);
  EXPECT_EQ(sent_[Req(1)][0].what, "err");
  EXPECT_EQ(sent_[Req(1)][0].err, EIO);
}

TEST_F(ReplyTest, ForgetThatThrowsAfterItsAnswerIsNotAnsweredAgain) {
  auto forget = GuardNoReply<&ForgetThenThrow>("forget");
  forget(Req(2), 1, 1);
  ASSERT_EQ(sent_[Req(2)].size(), 1u);
  EXPECT_EQ(sent_[Req(2)][0].what, "none");
}

// The LOWER gate's watchdog answers from its own thread (ErrOn, with the
// request's token); the handler's own answer afterwards is not sent.
void AnsweredByWatchdog(fuse_req_t req, fuse_ino_t, size_t, off_t, fuse_file_info*) {
  ReplyToken* token = ReplyToken::For(req);
  std::thread watchdog([&] { reply::ErrOn(token, req, ETIMEDOUT); });
  watchdog.join();
  reply::Err(req, EIO);  // a handler that forgot to check answered()
  throw std::runtime_error("and then threw");
}

TEST_F(ReplyTest, AnswerFromAnotherThreadClaimsTheRequest) {
  auto read = Guard<&AnsweredByWatchdog>("read");
  read(Req(3), 1, 4, 0, nullptr);
  ASSERT_EQ(sent_[Req(3)].size(), 1u);
  EXPECT_EQ(sent_[Req(3)][0].err, ETIMEDOUT);
}

TEST_F(ReplyTest, TokensNestPerThread) {
  EXPECT_EQ(ReplyToken::For(Req(0)), nullptr);
  {
    ReplyToken outer(Req(0));
    {
      ReplyToken inner(Req(1));
      EXPECT_EQ(ReplyToken::For(Req(1)), &inner);
      EXPECT_EQ(ReplyToken::For(Req(0)), nullptr);  // only the innermost
    }
    EXPECT_EQ(ReplyToken::For(Req(0)), &outer);
  }
  EXPECT_EQ(ReplyToken::For(Req(0)), nullptr);
}

}  // namespace reply_test_cases
}  // namespace epochfs::fs
