#include "operator_io.h"

#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "epochfs/control/metrics_text.h"

namespace epochfs {

Status OperatorIo::Prepare(const Config& cfg, const std::string& lower,
                           const std::string& mountpoint) {
  notify_ = ::getenv("NOTIFY_SOCKET") != nullptr;
  under_journal_ = log::StderrIsJournal();
  log_.main = under_journal_ ? log::Main::kJournal : log::Main::kStderr;
  log_.fields = {{"EPOCHFS_MOUNTPOINT", mountpoint}, {"EPOCHFS_LOWER", lower}};
  log_.file = cfg.log.file;
  log_.max_bytes = cfg.log.max_bytes;
  log_.files = cfg.log.files;
  if (Status s = log::SetTargets(log_); !s.ok()) return s;
  listen_ = cfg.metrics.listen;
  if (!listen_.empty()) {
    Result<ListenAddress> address = ParseListenAddress(listen_);
    if (!address.ok()) return address.status();
    Result<UniqueFd> listener = MetricsHttp::Listen(address.value());
    if (!listener.ok()) return listener.status();
    listener_ = std::move(listener).value();
  }
  return Status::Ok();
}

void OperatorIo::WarnIfLost() const {
  if (!under_journal_ && log_.file.empty() && ::access("/dev/log", F_OK) != 0) {
    log::Warn("no syslog here (/dev/log is missing): the log lines of this background mount "
              "are lost; set log.file = PATH, or run it in the foreground (-f)");
  }
}

Status OperatorIo::Detach() {
  log_.main = under_journal_ ? log::Main::kJournal : log::Main::kSyslog;
  return log::SetTargets(log_);
}

Status OperatorIo::StartHttp(std::function<std::string()> stats) {
  if (!listener_.valid()) return Status::Ok();
  auto text = [stats = std::move(stats)] {
    return control::PrometheusText(nlohmann::json::parse(stats(), nullptr, false),
                                   control::MetricsOptions{.aggregates_only = true});
  };
  auto started = MetricsHttp::Start(std::move(listener_), std::move(text));
  if (!started.ok()) return started.status();
  http_ = std::move(started).value();
  log::Info("metrics served at http://" + listen_ + "/metrics");
  return Status::Ok();
}

void OperatorIo::Ready(const std::string& lower, const std::string& mountpoint) const {
  if (notify_) {
    (void)sd_notifyf(0, "READY=1\nSTATUS=serving %s at %s", lower.c_str(), mountpoint.c_str());
  }
}

void OperatorIo::Stopping() const {
  if (notify_) (void)sd_notify(0, "STOPPING=1");
}

}  // namespace epochfs
