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

template <auto Fn>
struct Guarded;

// Callbacks that answer their request with a fuse_reply_* call.
template <typename... Args, void (*Fn)(fuse_req_t, Args...)>
struct Guarded<Fn> {
  static void Call(fuse_req_t req, Args... args) noexcept {
    try {
      Fn(req, args...);
    } catch (const std::exception& e) {
      LogEscapedException(name, e.what());
      fuse_reply_err(req, EIO);
    } catch (...) {
      LogEscapedException(name, "unknown exception");
      fuse_reply_err(req, EIO);
    }
  }
  // Set by the op table (for the log line).
  static inline const char* name = "callback";
};

// FORGET and BATCH_FORGET take no answer but fuse_reply_none.
template <auto Fn>
struct GuardedNoReply;

template <typename... Args, void (*Fn)(fuse_req_t, Args...)>
struct GuardedNoReply<Fn> {
  static void Call(fuse_req_t req, Args... args) noexcept {
    try {
      Fn(req, args...);
    } catch (const std::exception& e) {
      LogEscapedException(name, e.what());
      fuse_reply_none(req);
    } catch (...) {
      LogEscapedException(name, "unknown exception");
      fuse_reply_none(req);
    }
  }
  static inline const char* name = "forget";
};

// The guarded form of callback Fn, for the op table; `name` names it in the log.
template <auto Fn>
auto Guard(const char* name) {
  Guarded<Fn>::name = name;
  return &Guarded<Fn>::Call;
}
template <auto Fn>
auto GuardNoReply(const char* name) {
  GuardedNoReply<Fn>::name = name;
  return &GuardedNoReply<Fn>::Call;
}

}  // namespace epochfs::fs
