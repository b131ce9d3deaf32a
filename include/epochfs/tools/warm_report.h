// How `epochfs warm` tells the mount its progress: reports to
// ROOT/.epochfs/warm (one write(2) each; the daemon's side is
// control/warm_progress.h), which `stats` shows as its "warm" rows and
// `epochfs top` as a line per warm.
//
// WarmReporter opens the file once; Report writes one line. A mount that has
// no such file (an older daemon) or refuses a report costs the warm nothing:
// reports are then dropped. WarmCounts are plain counters, read by the
// reporter while the readers add to them.
// Thread safety: WarmCounts: atomics; WarmReporter: one thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "epochfs/common/unique_fd.h"

namespace epochfs::tools {

struct WarmCounts {
  std::atomic<uint64_t> files_done{0}, files_total{0}, bytes_done{0}, bytes_total{0};
  std::atomic<uint64_t> errors{0};
};

// "FILES_DONE FILES_TOTAL BYTES_DONE BYTES_TOTAL ERRORS STATE\n"; the done
// counts capped at the totals (a file that grew while read).
std::string WarmReportLine(const WarmCounts& c, const char* state);

class WarmReporter {
 public:
  explicit WarmReporter(const std::string& root);
  void Report(const WarmCounts& c, const char* state);
  bool connected() const { return fd_.valid(); }

 private:
  UniqueFd fd_;
};

}  // namespace epochfs::tools
