#include "epochfs/common/log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "epochfs/common/own_file.h"

namespace epochfs::log {
namespace {

// Local time to the millisecond: lines on stderr (-f) and in the file say
// when; syslog and the journal add their own.
constexpr char kTimedPattern[] = "epochfs: %Y-%m-%d %H:%M:%S.%e %l: %v";

std::atomic<JournalSend> g_journal_send{&sd_journal_sendv};

// The logger, swapped whole by SetTargets (spdlog loggers are thread-safe;
// the pointer is read under its own lock).
std::mutex g_mu;
std::shared_ptr<spdlog::logger>& LoggerSlot() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>(
        "epochfs", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern(kTimedPattern);
    l->set_level(spdlog::level::info);
    return l;
  }();
  return logger;
}
std::shared_ptr<spdlog::logger> Logger() {
  std::lock_guard lock(g_mu);
  return LoggerSlot();
}

spdlog::level::level_enum ToSpdlog(Level level) {
  static constexpr spdlog::level::level_enum kMap[] = {
      spdlog::level::debug, spdlog::level::info, spdlog::level::warn, spdlog::level::err,
      spdlog::level::off};
  return kMap[static_cast<int>(level)];
}

int SyslogPriority(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace:
    case spdlog::level::debug: return LOG_DEBUG;
    case spdlog::level::info: return LOG_INFO;
    case spdlog::level::warn: return LOG_WARNING;
    case spdlog::level::err: return LOG_ERR;
    default: return LOG_CRIT;
  }
}

// The journal, with fields of its own (spdlog's systemd sink has none).
class JournalSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  JournalSink(std::string ident, std::vector<std::pair<std::string, std::string>> fields)
      : ident_("SYSLOG_IDENTIFIER=" + std::move(ident)) {
    for (auto& [k, v] : fields) fields_.push_back(k + "=" + v);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string message = "MESSAGE=" + std::string(msg.payload.data(), msg.payload.size());
    const std::string priority = "PRIORITY=" + std::to_string(SyslogPriority(msg.level));
    std::vector<iovec> iov;
    auto add = [&iov](const std::string& s) {
      iov.push_back({const_cast<char*>(s.data()), s.size()});
    };
    add(message);
    add(priority);
    add(ident_);
    for (const std::string& f : fields_) add(f);
    (void)g_journal_send.load()(iov.data(), static_cast<int>(iov.size()));
  }
  void flush_() override {}

 private:
  std::string ident_;
  std::vector<std::string> fields_;
};

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

void SetLevel(Level level) { Logger()->set_level(ToSpdlog(level)); }

bool Enabled(Level level) {
  return level != Level::kOff && Logger()->should_log(ToSpdlog(level));
}

Status SetTargets(const Targets& t) {
  std::vector<spdlog::sink_ptr> sinks;
  switch (t.main) {
    case Main::kStderr: {
      auto s = std::make_shared<spdlog::sinks::stderr_sink_mt>();
      s->set_pattern(kTimedPattern);
      sinks.push_back(s);
      break;
    }
    case Main::kSyslog: {
      // The message alone: syslog adds the time, the ident and the pid.
      sinks.push_back(std::make_shared<spdlog::sinks::syslog_sink_mt>(
          t.ident, LOG_PID, LOG_DAEMON, /*enable_formatting=*/false));
      break;
    }
    case Main::kJournal:
      sinks.push_back(std::make_shared<JournalSink>(t.ident, t.fields));
      break;
  }
  if (!t.file.empty()) {
    // Checked as the daemon's own, then handed to spdlog by name (it reopens
    // the file after each rotation: a new one is made 0600 too).
    Result<UniqueFd> own = OpenOwnFile(t.file, "log.file", /*truncate=*/false);
    if (!own.ok()) return own.status();
    spdlog::file_event_handlers events;
    events.after_open = [](const spdlog::filename_t&, std::FILE* f) {
      (void)::fchmod(::fileno(f), 0600);
    };
    try {
      auto s = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
          t.file, static_cast<size_t>(t.max_bytes), t.files, /*rotate_on_open=*/false, events);
      s->set_pattern(kTimedPattern);
      sinks.push_back(s);
    } catch (const spdlog::spdlog_ex& e) {
      return IoError("log.file " + t.file + ": " + e.what());
    }
  }
  auto l = std::make_shared<spdlog::logger>("epochfs", sinks.begin(), sinks.end());
  std::lock_guard lock(g_mu);
  l->set_level(LoggerSlot()->level());
  // Every line reaches the file at once: a crash or a SIGKILL loses none
  // (one write per line; at debug, one per read).
  l->flush_on(spdlog::level::trace);
  LoggerSlot() = std::move(l);
  return Status::Ok();
}

std::string Describe(const Targets& t) {
  std::string out;
  switch (t.main) {
    case Main::kStderr: out = "stderr"; break;
    case Main::kSyslog: out = "syslog (facility daemon, ident " + t.ident + ")"; break;
    case Main::kJournal: out = "the journal (SYSLOG_IDENTIFIER=" + t.ident + ")"; break;
  }
  if (!t.file.empty()) {
    out += " and " + t.file + " (rotated at " + std::to_string(t.max_bytes) + " bytes, " +
           std::to_string(t.files) + " kept)";
  }
  return out;
}

bool StderrIsJournal() {
  const char* js = std::getenv("JOURNAL_STREAM");
  if (js == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  return ::fstat(STDERR_FILENO, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

void SetJournalSendForTest(JournalSend send) {
  g_journal_send.store(send != nullptr ? send : &sd_journal_sendv);
}

void Debug(const std::string& msg) { Logger()->debug(msg); }
void Info(const std::string& msg) { Logger()->info(msg); }
void Warn(const std::string& msg) { Logger()->warn(msg); }
void Error(const std::string& msg) { Logger()->error(msg); }

}  // namespace epochfs::log
