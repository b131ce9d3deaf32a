// Logging: a thin facade over spdlog so that only src/common/log.cc sees it.
//
// Lines go to one main target, stderr (the default), syslog or the systemd
// journal, and, when a file is set, also to that file, rotated by size
// (spdlog's rotating file sink). SetTargets replaces both at once.
// Thread safety: all functions are thread-safe.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs::log {

enum class Level { kDebug, kInfo, kWarn, kError, kOff };

// Parses a level name as spdlog does ("debug", "info", "warn", "error",
// "off"; also "warning", "err", "trace" = debug, "critical" = error).
bool ParseLevel(std::string_view s, Level* out);
void SetLevel(Level level);
// Whether a line of `level` would be logged: build costly debug lines (a
// path per read) only when it is.
bool Enabled(Level level);

enum class Main { kStderr, kSyslog, kJournal };

struct Targets {
  Main main = Main::kStderr;
  std::string ident = "epochfs";  // syslog's ident, the journal's SYSLOG_IDENTIFIER
  // The journal's own fields on every line ({"EPOCHFS_MOUNTPOINT", "/mnt"}).
  std::vector<std::pair<std::string, std::string>> fields;
  // Also to this file ("" = none): the daemon's own only (common/own_file.h),
  // appended to, mode 0600; before it would pass max_bytes it is renamed
  // with a number before its extension (spdlog's names: epochfs.log becomes
  // epochfs.1.log, epochfs.1.log epochfs.2.log, ...), `files` of them kept.
  std::string file;
  uint64_t max_bytes = 10ull << 20;
  uint32_t files = 5;
};

// Lines go to `t` from now on (the level stays). The file is checked and
// opened now: its error (naming "log.file PATH"), and nothing changed.
Status SetTargets(const Targets& t);
// Where lines go, for the line a mount logs: "stderr", "syslog (facility
// daemon, ident epochfs)", "the journal", and " and FILE (rotated at N
// bytes, K kept)".
std::string Describe(const Targets& t);
// Whether stderr is the journal's stream: JOURNAL_STREAM (which systemd sets
// for a service whose output goes to the journal) names its device and inode.
bool StderrIsJournal();

// The journal's send call (sd_journal_sendv), replaceable by a test.
using JournalSend = int (*)(const struct iovec* iov, int n);
void SetJournalSendForTest(JournalSend send);

void Debug(const std::string& msg);
void Info(const std::string& msg);
void Warn(const std::string& msg);
void Error(const std::string& msg);

}  // namespace epochfs::log
