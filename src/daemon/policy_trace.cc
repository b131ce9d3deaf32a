#include "policy_trace.h"

#include <fcntl.h>
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
  TraceWriter(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  ~TraceWriter() { Flush(); }
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void Add(const std::string& line) {
    if (failed_) return;
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
    buf_.clear();
  }

  UniqueFd fd_;
  std::string path_;
  std::string buf_;
  uint64_t lines_ = 0;
  bool failed_ = false;
};

}  // namespace

Result<std::unique_ptr<cache::Policy>> RecordPolicyTrace(const std::string& path,
                                                         std::unique_ptr<cache::Policy> policy,
                                                         trace::RecordedParams params) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return Status(errno == ENOENT ? Code::kNotFound : Code::kIoError,
                  "trace.file " + path + ": " + std::strerror(errno));
  }
  auto writer = std::make_shared<TraceWriter>(UniqueFd(fd), path);
  return trace::MakeRecordingPolicy(std::move(policy),
                                    [writer](const std::string& line) { writer->Add(line); },
                                    params);
}

}  // namespace epochfs
