#include "policy_trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "epochfs/common/log.h"
#include "epochfs/common/own_file.h"
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

}  // namespace

Result<std::unique_ptr<cache::Policy>> RecordPolicyTrace(const std::string& path,
                                                         uint64_t max_bytes,
                                                         std::unique_ptr<cache::Policy> policy,
                                                         trace::RecordedParams params) {
  // The trace names every job and its accesses: only into the daemon's own
  // file (common/own_file.h), truncated.
  Result<UniqueFd> fd = OpenOwnFile(path, "trace.file", /*truncate=*/true);
  if (!fd.ok()) return fd.status();
  auto writer = std::make_shared<TraceWriter>(std::move(fd).value(), path, max_bytes);
  return trace::MakeRecordingPolicy(std::move(policy),
                                    [writer](const std::string& line) { writer->Add(line); },
                                    params);
}

}  // namespace epochfs
