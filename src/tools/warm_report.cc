#include "epochfs/tools/warm_report.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace epochfs::tools {

std::string WarmReportLine(const WarmCounts& c, const char* state) {
  const uint64_t files_total = c.files_total.load(), bytes_total = c.bytes_total.load();
  return std::to_string(std::min(c.files_done.load(), files_total)) + " " +
         std::to_string(files_total) + " " +
         std::to_string(std::min(c.bytes_done.load(), bytes_total)) + " " +
         std::to_string(bytes_total) + " " + std::to_string(c.errors.load()) + " " + state +
         "\n";
}

WarmReporter::WarmReporter(const std::string& root)
    : fd_(::open(((root == "/" ? std::string() : root) + "/.epochfs/warm").c_str(),
                 O_WRONLY | O_CLOEXEC)) {}

void WarmReporter::Report(const WarmCounts& c, const char* state) {
  if (!fd_.valid()) return;
  const std::string line = WarmReportLine(c, state);
  if (::write(fd_.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    fd_.reset();  // refused: the warm goes on without reports
  }
}

}  // namespace epochfs::tools
