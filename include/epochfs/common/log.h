// Logging: a thin facade over spdlog so that only src/common/log.cc sees it.
// Thread safety: all functions are thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace epochfs::log {

enum class Level { kDebug, kInfo, kWarn, kError, kOff };

// Parses a level name as spdlog does ("debug", "info", "warn", "error",
// "off"; also "warning", "err", "trace" = debug, "critical" = error).
bool ParseLevel(std::string_view s, Level* out);
void SetLevel(Level level);
// Whether a line of `level` would be logged: build costly debug lines (a
// path per read) only when it is.
bool Enabled(Level level);
// Send log lines to syslog instead of stderr (daemon mode).
void UseSyslog(const std::string& ident);

void Debug(const std::string& msg);
void Info(const std::string& msg);
void Warn(const std::string& msg);
void Error(const std::string& msg);

}  // namespace epochfs::log
