// Guarded<Fn>: the last-resort guard around one FUSE low-level callback.
//
// No input may end the daemon. The code behind a callback reports failures as
// Status values, but the libraries it calls (the standard library's
// allocators and containers, the JSON writer, TOML++) can throw; an exception
// that left a callback would reach the C code of libfuse and std::terminate,
// unmounting the filesystem for every user. Guarded<&Fn>::Call runs Fn and, if
// it throws, logs the callback's name and the exception's text once per
// exception and answers the request with EIO (a FORGET, which takes no answer,
// with fuse_reply_none).
//
// Contract relied on: every callback replies as its last action, so an
// exception escapes only from a request that has not been answered yet. (A
// reply frees the request; answering twice would be a bug of its own.)
#pragma once

#include <fuse_lowlevel.h>

#include <cerrno>
#include <exception>
#include <string>

#include "epochfs/common/log.h"

namespace epochfs::fs {

// Logs an exception that escaped callback `op`; never throws.
inline void LogEscapedException(const char* op, const char* what) noexcept {
  try {
    log::Error(std::string("internal error in FUSE ") + op + ": " + what +
               " (request answered EIO)");
  } catch (...) {
  }
}

// kReply: the callback answers with fuse_reply_* (EIO on an exception);
// otherwise it takes no answer but fuse_reply_none (FORGET, BATCH_FORGET).
template <auto Fn, bool kReply>
struct Guarded;

template <typename... Args, void (*Fn)(fuse_req_t, Args...), bool kReply>
struct Guarded<Fn, kReply> {
  static void Call(fuse_req_t req, Args... args) noexcept {
    try {
      Fn(req, args...);
      return;
    } catch (const std::exception& e) {
      LogEscapedException(name, e.what());
    } catch (...) {
      LogEscapedException(name, "unknown exception");
    }
    if constexpr (kReply) {
      fuse_reply_err(req, EIO);
    } else {
      fuse_reply_none(req);
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
