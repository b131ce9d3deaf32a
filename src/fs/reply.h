// reply::*: the only way src/fs answers a FUSE request.
//
// A request takes exactly one answer (fuse_reply_* frees it). The last-resort
// guard (callback_guard.h) answers EIO when a callback throws, and must know
// whether the request was answered already: code may run after a reply (the
// read path's kernel-page bookkeeping, for one) and may throw. So every answer
// goes through a ReplyToken, made by the guard for the callback's duration:
// the first answer claims it, and the guard answers only an unclaimed request.
// A second answer to a request is never sent (it is logged as the bug it is).
// The raw fuse_reply_* functions are poisoned below for every file that
// includes this header, so no answer can bypass the token.
//
// Answers from another thread (the LOWER gate's watchdog, for an
// Answerable request) name the token they claim (reply::ErrOn), which the
// guard keeps alive until the callback returns.
//
// Test seam: reply_test::sink, when set, receives every answer instead of
// libfuse (nullptr in production; tests/unit/fs/reply_test.cc sets it), and
// reply_test::after_send runs right after each answer (a fault hook: it may
// throw, as post-reply work can).
//
// Thread safety: a token's claim is atomic; the current token is per thread.
#pragma once

#include <fuse_lowlevel.h>
#include <sys/statvfs.h>
#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <string>

#include "epochfs/common/log.h"

namespace epochfs::fs {

// One request's answer: unclaimed until the first reply.
class ReplyToken {
 public:
  // Makes this the current token of the calling thread while alive.
  explicit ReplyToken(fuse_req_t req) noexcept : req_(req), prev_(current_) { current_ = this; }
  ~ReplyToken() { current_ = prev_; }
  ReplyToken(const ReplyToken&) = delete;
  ReplyToken& operator=(const ReplyToken&) = delete;

  // True exactly once: the caller is the one to answer.
  bool Claim() noexcept { return !claimed_.exchange(true, std::memory_order_acq_rel); }
  bool claimed() const noexcept { return claimed_.load(std::memory_order_acquire); }
  fuse_req_t req() const noexcept { return req_; }

  // The calling thread's token for `req`, or null (no guard around the call).
  static ReplyToken* For(fuse_req_t req) noexcept {
    return current_ != nullptr && current_->req_ == req ? current_ : nullptr;
  }

 private:
  fuse_req_t req_;
  std::atomic<bool> claimed_{false};
  ReplyToken* prev_;
  static inline thread_local ReplyToken* current_ = nullptr;
};

namespace reply_test {
// Test-only: where answers go instead of libfuse (`what` names the reply
// kind, `err` the errno of an error reply, `bytes` the data of a buf or iov
// reply), and a hook run after each answer. Both nullptr in production.
inline void (*sink)(fuse_req_t req, const char* what, int err, size_t bytes) = nullptr;
inline void (*after_send)(fuse_req_t req) = nullptr;
}  // namespace reply_test

namespace reply {
namespace detail {

inline void LogSecondAnswer(const char* what) noexcept {
  try {
    log::Error(std::string("internal error: a second answer (") + what +
               ") to a FUSE request was not sent");
  } catch (...) {
  }
}

// Claims `token` (when there is one) and sends with `send`; a claimed
// request's second answer is dropped. Returns what fuse_reply_* returns.
template <typename Send>
int Answer(ReplyToken* token, fuse_req_t req, const char* what, int err, Send send,
           size_t bytes = 0) {
  if (token != nullptr && !token->Claim()) {
    LogSecondAnswer(what);
    return -EALREADY;
  }
  int rc = 0;
  if (reply_test::sink != nullptr) {
    reply_test::sink(req, what, err, bytes);
  } else {
    rc = send();
  }
  if (reply_test::after_send != nullptr) reply_test::after_send(req);
  return rc;
}

}  // namespace detail

inline int Err(fuse_req_t req, int err) {
  return detail::Answer(ReplyToken::For(req), req, "err", err,
                        [&] { return fuse_reply_err(req, err); });
}
// An error answer on behalf of the request of `token` from any thread.
inline int ErrOn(ReplyToken* token, fuse_req_t req, int err) {
  return detail::Answer(token, req, "err", err, [&] { return fuse_reply_err(req, err); });
}
inline void None(fuse_req_t req) {
  detail::Answer(ReplyToken::For(req), req, "none", 0, [&] {
    fuse_reply_none(req);
    return 0;
  });
}
inline int Entry(fuse_req_t req, const fuse_entry_param* e) {
  return detail::Answer(ReplyToken::For(req), req, "entry", 0,
                        [&] { return fuse_reply_entry(req, e); });
}
inline int Create(fuse_req_t req, const fuse_entry_param* e, const fuse_file_info* fi) {
  return detail::Answer(ReplyToken::For(req), req, "create", 0,
                        [&] { return fuse_reply_create(req, e, fi); });
}
inline int Attr(fuse_req_t req, const struct stat* attr, double timeout) {
  return detail::Answer(ReplyToken::For(req), req, "attr", 0,
                        [&] { return fuse_reply_attr(req, attr, timeout); });
}
inline int Readlink(fuse_req_t req, const char* link) {
  return detail::Answer(ReplyToken::For(req), req, "readlink", 0,
                        [&] { return fuse_reply_readlink(req, link); });
}
inline int Open(fuse_req_t req, const fuse_file_info* fi) {
  return detail::Answer(ReplyToken::For(req), req, "open", 0,
                        [&] { return fuse_reply_open(req, fi); });
}
inline int Write(fuse_req_t req, size_t count) {
  return detail::Answer(ReplyToken::For(req), req, "write", 0,
                        [&] { return fuse_reply_write(req, count); });
}
inline int Buf(fuse_req_t req, const char* buf, size_t size) {
  return detail::Answer(ReplyToken::For(req), req, "buf", 0,
                        [&] { return fuse_reply_buf(req, buf, size); }, size);
}
inline int Iov(fuse_req_t req, const struct iovec* iov, int count) {
  size_t bytes = 0;
  for (int i = 0; i < count; ++i) bytes += iov[i].iov_len;
  return detail::Answer(ReplyToken::For(req), req, "iov", 0,
                        [&] { return fuse_reply_iov(req, iov, count); }, bytes);
}
inline int Statfs(fuse_req_t req, const struct statvfs* stbuf) {
  return detail::Answer(ReplyToken::For(req), req, "statfs", 0,
                        [&] { return fuse_reply_statfs(req, stbuf); });
}

}  // namespace reply
}  // namespace epochfs::fs

// Every answer goes through reply:: (above).
#pragma GCC poison fuse_reply_err fuse_reply_none fuse_reply_entry fuse_reply_create
#pragma GCC poison fuse_reply_attr fuse_reply_readlink fuse_reply_open fuse_reply_write
#pragma GCC poison fuse_reply_buf fuse_reply_iov fuse_reply_statfs fuse_reply_data
#pragma GCC poison fuse_reply_bmap fuse_reply_ioctl fuse_reply_poll fuse_reply_xattr
#pragma GCC poison fuse_reply_lock fuse_reply_lseek fuse_reply_ioctl_retry fuse_reply_ioctl_iov
