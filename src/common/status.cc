#include "epochfs/common/status.h"

#include <cerrno>
#include <cstring>

namespace epochfs {

const char* CodeName(Code c) {
  switch (c) {
    case Code::kOk: return "OK";
    case Code::kNotFound: return "NotFound";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kPermissionDenied: return "PermissionDenied";
    case Code::kNotPermitted: return "NotPermitted";
    case Code::kNoSpace: return "NoSpace";
    case Code::kIoError: return "IoError";
    case Code::kCorruption: return "Corruption";
    case Code::kReadOnly: return "ReadOnly";
    case Code::kExists: return "Exists";
    case Code::kNotEmpty: return "NotEmpty";
    case Code::kUnsupported: return "Unsupported";
    case Code::kBusy: return "Busy";
    case Code::kInternal: return "Internal";
    case Code::kIsDirectory: return "IsDirectory";
    case Code::kNotDirectory: return "NotDirectory";
    case Code::kTimedOut: return "TimedOut";
    case Code::kInterrupted: return "Interrupted";
    case Code::kStale: return "Stale";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status ErrnoStatus(Code code, int err, const std::string& what) {
  return Status(code, what + ": " + std::strerror(err));
}

Status StatusFromErrno(int err, const std::string& what) {
  switch (err) {
    case ENOENT: return ErrnoStatus(Code::kNotFound, err, what);
    case EEXIST: return ErrnoStatus(Code::kExists, err, what);
    case EISDIR: return ErrnoStatus(Code::kIsDirectory, err, what);
    case ENOTDIR: return ErrnoStatus(Code::kNotDirectory, err, what);
    case ENOTEMPTY: return ErrnoStatus(Code::kNotEmpty, err, what);
    case ENOSPC: case EDQUOT: return ErrnoStatus(Code::kNoSpace, err, what);
    case EACCES: return ErrnoStatus(Code::kPermissionDenied, err, what);
    case EPERM: return ErrnoStatus(Code::kNotPermitted, err, what);
    case EINVAL: case ELOOP: case ENAMETOOLONG: return ErrnoStatus(Code::kInvalidArgument, err, what);
    case EBUSY: return ErrnoStatus(Code::kBusy, err, what);
    default: return ErrnoStatus(Code::kIoError, err, what);
  }
}

Status IoStatusFromErrno(int err, const std::string& what) {
  return err == ENOSPC || err == EDQUOT ? StatusFromErrno(err, what)
                                        : ErrnoStatus(Code::kIoError, err, what);
}

}  // namespace epochfs
