#include "epochfs/common/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>

#include <memory>

namespace epochfs::log {
namespace {

std::shared_ptr<spdlog::logger>& Logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_logger_mt("epochfs");
    // Local time to the millisecond: lines of a foreground daemon (-f) say
    // when; syslog adds its own.
    l->set_pattern("epochfs: %Y-%m-%d %H:%M:%S.%e %l: %v");
    l->set_level(spdlog::level::info);
    return l;
  }();
  return logger;
}

spdlog::level::level_enum ToSpdlog(Level level) {
  static constexpr spdlog::level::level_enum kMap[] = {
      spdlog::level::debug, spdlog::level::info, spdlog::level::warn, spdlog::level::err,
      spdlog::level::off};
  return kMap[static_cast<int>(level)];
}

}  // namespace

bool ParseLevel(std::string_view s, Level* out) {
  const spdlog::level::level_enum l = spdlog::level::from_str(std::string(s));
  if (l == spdlog::level::off && s != "off") return false;  // from_str's "unknown"
  switch (l) {
    case spdlog::level::trace:
    case spdlog::level::debug: *out = Level::kDebug; break;
    case spdlog::level::info: *out = Level::kInfo; break;
    case spdlog::level::warn: *out = Level::kWarn; break;
    case spdlog::level::err:
    case spdlog::level::critical: *out = Level::kError; break;
    default: *out = Level::kOff; break;
  }
  return true;
}

void SetLevel(Level level) {
  Logger()->set_level(ToSpdlog(level));
}

bool Enabled(Level level) {
  return level != Level::kOff && Logger()->should_log(ToSpdlog(level));
}

void UseSyslog(const std::string& ident) {
  auto level = Logger()->level();
  spdlog::drop("epochfs");
  auto l = spdlog::syslog_logger_mt("epochfs", ident, LOG_PID, LOG_DAEMON);
  l->set_pattern("%l: %v");
  l->set_level(level);
  Logger() = l;
}

void Debug(const std::string& msg) { Logger()->debug(msg); }
void Info(const std::string& msg) { Logger()->info(msg); }
void Warn(const std::string& msg) { Logger()->warn(msg); }
void Error(const std::string& msg) { Logger()->error(msg); }

}  // namespace epochfs::log
