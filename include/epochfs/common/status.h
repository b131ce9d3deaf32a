// Status and Result<T>: errors as values.
//
// Every fallible function in epochfs returns a Status or a Result<T>. Codes are
// translated to errno exactly once, at the FUSE edge (src/fs/errno_map.cc).
// Thread safety: values; copy freely.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace epochfs {

enum class Code : uint8_t {
  kOk,
  kNotFound,
  kInvalidArgument,
  kPermissionDenied,  // the file's permissions refuse it (EACCES)
  kNotPermitted,      // the caller may not do this, whatever the modes (EPERM)
  kNoSpace,
  kIoError,
  kCorruption,
  kReadOnly,
  kExists,
  kNotEmpty,
  kUnsupported,
  kBusy,
  kInternal,
  kIsDirectory,   // a file operation on a directory (EISDIR)
  kNotDirectory,  // a path component or operand is not a directory (ENOTDIR)
  kTimedOut,      // LOWER did not answer within lower.timeout (ETIMEDOUT)
  kInterrupted,   // the request was interrupted (EINTR)
  kStale,         // the file changed under an open that reads it in parts (ESTALE)
};

const char* CodeName(Code c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: reason" (or "OK").
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status PermissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
inline Status NotPermitted(std::string m) { return {Code::kNotPermitted, std::move(m)}; }
inline Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
inline Status Corruption(std::string m) { return {Code::kCorruption, std::move(m)}; }
inline Status ReadOnly(std::string m) { return {Code::kReadOnly, std::move(m)}; }
inline Status NoSpace(std::string m) { return {Code::kNoSpace, std::move(m)}; }
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
inline Status IsDirectory(std::string m) { return {Code::kIsDirectory, std::move(m)}; }
inline Status NotDirectory(std::string m) { return {Code::kNotDirectory, std::move(m)}; }
inline Status Stale(std::string m) { return {Code::kStale, std::move(m)}; }

// errno to Status, for the system calls below the FUSE edge (the one rule;
// the edge maps codes back in src/fs/errno_map.cc). The message is
// "WHAT: <strerror(err)>".
// StatusFromErrno gives the code that names `err`: ENOENT NotFound, EEXIST
// Exists, EISDIR IsDirectory, ENOTDIR NotDirectory, ENOTEMPTY NotEmpty, ENOSPC
// and EDQUOT NoSpace, EACCES PermissionDenied, EPERM NotPermitted, EINVAL,
// ELOOP and ENAMETOOLONG InvalidArgument, EBUSY Busy, anything else IoError.
Status StatusFromErrno(int err, const std::string& what);
// For reads and writes of data: NoSpace when the device or the quota is full
// (ENOSPC, EDQUOT), else IoError.
Status IoStatusFromErrno(int err, const std::string& what);
// The same message with a code the caller chose, for a layer that promises
// its callers fewer codes than errno has (the dataset: NotFound for any path
// that does not resolve beneath its root).
Status ErrnoStatus(Code code, int err, const std::string& what);

// Result<T> holds either a T or a non-OK Status.
// REQUIRES: value() only when ok(); status() is OK when a value is held.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace epochfs
