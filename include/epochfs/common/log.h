// Logging: a thin facade over spdlog so that only src/common/log.cc sees it.
// Thread safety: all functions are thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace epochfs::log {

enum class Level { kDebug, kInfo, kWarn, kError, kOff };

// Parses "debug" | "info" | "warn" | "error" | "off".
bool ParseLevel(std::string_view s, Level* out);
void SetLevel(Level level);
// Send log lines to syslog instead of stderr (daemon mode).
void UseSyslog(const std::string& ident);

void Debug(const std::string& msg);
void Info(const std::string& msg);
void Warn(const std::string& msg);
void Error(const std::string& msg);

}  // namespace epochfs::log
