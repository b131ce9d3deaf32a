#include "policy_trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "epochfs/common/log.h"
#include "epochfs/common/unique_fd.h"
#include "epochfs/trace/recording_policy.h"

namespace epochfs {
namespace {

class TraceWriter {
 public:
  TraceWriter(UniqueFd fd, std::string path, uint64_t max_bytes)
      : fd_(std::move(fd)), path_(std::move(path)), max_bytes_(max_bytes) {}
  ~TraceWriter() { Flush(); }
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void Add(const std::string& line) {
    if (failed_) return;
    if (written_ + buf_.size() + line.size() + 1 > max_bytes_) {
      Flush();  // whole lines only: what the file holds replays
      failed_ = true;
      log::Warn("trace.file " + path_ + ": reached trace.max_bytes (" +
                std::to_string(max_bytes_) + " bytes); the policy trace stops here");
      return;
    }
    buf_ += line;
    buf_ += '\n';
    if (++lines_ == 1 || buf_.size() >= kFlushAt) Flush();
  }

 private:
  static constexpr size_t kFlushAt = 64 * 1024;

  void Flush() {
    size_t done = 0;
    while (!failed_ && done < buf_.size()) {
      const ssize_t n = ::write(fd_.get(), buf_.data() + done, buf_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failed_ = true;
        log::Warn("trace.file " + path_ + ": " + (n < 0 ? std::strerror(errno) : "short write") +
                  "; the policy trace stops here");
      } else {
        done += static_cast<size_t>(n);
      }
    }
    written_ += done;
    buf_.clear();
  }

  UniqueFd fd_;
  std::string path_;
  uint64_t max_bytes_;
  uint64_t written_ = 0;
  std::string buf_;
  uint64_t lines_ = 0;
  bool failed_ = false;
};

// Opens the trace file only if it is the daemon's own: the trace names every
// job and its accesses, so a file another user made first (in /var/tmp, say)
// must not receive it; O_NONBLOCK so that a FIFO there cannot hang the mount.
// Truncated only once it has passed the checks.
Result<UniqueFd> OpenOwnTraceFile(const std::string& path) {
  const std::string what = "trace.file " + path + ": ";
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  if (!fd.valid() && errno == ENXIO) {
    return InvalidArgument(what + "not a regular file (a FIFO or a device)");
  }
  if (!fd.valid()) {
    return Status(errno == ENOENT ? Code::kNotFound : Code::kIoError,
                  what + std::strerror(errno) +
                      (errno == ELOOP ? " (a symbolic link is refused)" : ""));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status(Code::kIoError, what + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return InvalidArgument(what + "not a regular file");
  if (st.st_uid != ::geteuid()) {
    return InvalidArgument(what + "owned by uid " + std::to_string(st.st_uid) +
                           ", not by the daemon's user (whoever owns it could read the trace): "
                           "remove it or name another path");
  }
  if (st.st_nlink != 1) return InvalidArgument(what + "has other hard links");
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0 ||
      ::ftruncate(fd.get(), 0) != 0 ||
      ::fchmod(fd.get(), 0600) != 0) {
    return Status(Code::kIoError, what + std::strerror(errno));
  }
  return fd;
}

}  // namespace

Result<std::unique_ptr<cache::Policy>> RecordPolicyTrace(const std::string& path,
                                                         uint64_t max_bytes,
                                                         std::unique_ptr<cache::Policy> policy,
                                                         trace::RecordedParams params) {
  Result<UniqueFd> fd = OpenOwnTraceFile(path);
  if (!fd.ok()) return fd.status();
  auto writer = std::make_shared<TraceWriter>(std::move(fd).value(), path, max_bytes);
  return trace::MakeRecordingPolicy(std::move(policy),
                                    [writer](const std::string& line) { writer->Add(line); },
                                    params);
}

}  // namespace epochfs
