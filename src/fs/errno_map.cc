#include "errno_map.h"

#include <cerrno>

namespace epochfs::fs {

int ToErrno(const Status& s) {
  switch (s.code()) {
    case Code::kOk: return 0;
    case Code::kNotFound: return ENOENT;
    case Code::kInvalidArgument: return EINVAL;
    case Code::kPermissionDenied: return EACCES;
    case Code::kNotPermitted: return EPERM;
    case Code::kNoSpace: return ENOSPC;
    case Code::kIoError: return EIO;
    case Code::kCorruption: return EIO;
    case Code::kReadOnly: return EROFS;
    case Code::kExists: return EEXIST;
    case Code::kNotEmpty: return ENOTEMPTY;
    case Code::kUnsupported: return EOPNOTSUPP;
    case Code::kBusy: return EBUSY;
    case Code::kInternal: return EIO;
    case Code::kIsDirectory: return EISDIR;
    case Code::kNotDirectory: return ENOTDIR;
    case Code::kTimedOut: return ETIMEDOUT;
    case Code::kInterrupted: return EINTR;
    case Code::kStale: return ESTALE;
  }
  return EIO;
}

}  // namespace epochfs::fs
