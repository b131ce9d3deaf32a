// Guarded<Fn>: the last-resort guard around one FUSE low-level callback.
//
// No input may end the daemon. The code behind a callback reports failures as
// Status values, but the libraries it calls (the standard library's
// allocators and containers, the JSON writer, TOML++) can throw; an exception
// that left a callback would reach the C code of libfuse and std::terminate,
// unmounting the filesystem for every user. Guarded<&Fn>::Call runs Fn and, if
// it throws, logs the callback's name and the exception's text once per
// exception and, if the request has no answer yet, answers it with EIO (a
// FORGET, which takes no answer, with reply::None).
//
// Exactly one answer per request, by construction: Call holds the request's
// ReplyToken (reply.h) while Fn runs; every answer, Fn's own, the LOWER
// gate's watchdog's and the guard's, claims it first, and only the first is
// sent. So Fn may do work after its reply (and that work may throw): the
// exception is logged, and the request, answered already, is left alone.
// Thread safety: Call is reentrant; it runs on the calling FUSE thread.
#pragma once

#include <fuse_lowlevel.h>

#include <cerrno>
#include <exception>
#include <string>

#include "epochfs/common/log.h"
#include "reply.h"

namespace epochfs::fs {

// Logs an exception that escaped callback `op`; never throws.
inline void LogEscapedException(const char* op, const char* what, bool answered) noexcept {
  try {
    log::Error(std::string("internal error in FUSE ") + op + ": " + what +
               (answered ? " (after the request was answered)" : " (request answered EIO)"));
  } catch (...) {
  }
}

// kReply: the callback answers with a reply::* (EIO on an exception);
// otherwise it takes no answer but reply::None (FORGET, BATCH_FORGET).
template <auto Fn, bool kReply>
struct Guarded;

template <typename... Args, void (*Fn)(fuse_req_t, Args...), bool kReply>
struct Guarded<Fn, kReply> {
  static void Call(fuse_req_t req, Args... args) noexcept {
    ReplyToken token(req);
    try {
      Fn(req, args...);
      return;
    } catch (const std::exception& e) {
      LogEscapedException(name, e.what(), token.claimed());
    } catch (...) {
      LogEscapedException(name, "unknown exception", token.claimed());
    }
    if (token.claimed()) return;  // answered before the exception: nothing more to send
    try {
      if constexpr (kReply) {
        reply::Err(req, EIO);
      } else {
        reply::None(req);
      }
    } catch (...) {  // only a test's fault hook throws here
    }
  }
  static inline const char* name = "callback";  // set by Guard (for the log line)
};

// The guarded form of callback Fn, for the op table; `name` names it in the log.
template <auto Fn>
auto Guard(const char* name) {
  Guarded<Fn, true>::name = name;
  return &Guarded<Fn, true>::Call;
}
template <auto Fn>
auto GuardNoReply(const char* name) {
  Guarded<Fn, false>::name = name;
  return &Guarded<Fn, false>::Call;
}

}  // namespace epochfs::fs
