#include "epochfs/common/status.h"

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

}  // namespace epochfs
