#include "epochfs/control/warm_progress.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>
#include <sstream>

#include "epochfs/common/text_file.h"

namespace epochfs::control {
namespace {

// Runs: exists and is no zombie (an exited warm whose parent has not reaped
// it, as a detached one under an init that does not reap).
bool ProcessAlive(pid_t pid) {
  if (pid <= 0 || (::kill(pid, 0) != 0 && errno != EPERM)) return false;
  Result<std::string> stat = ReadTextFile("/proc/" + std::to_string(pid) + "/stat", "stat");
  if (!stat.ok()) return true;  // no /proc to ask: kill() said it exists
  const size_t paren = stat.value().rfind(')');  // the name may hold anything
  if (paren == std::string::npos || paren + 2 >= stat.value().size()) return true;
  const char state = stat.value()[paren + 2];
  return state != 'Z' && state != 'X';
}

bool ParseCount(const std::string& token, uint64_t* out) {
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), *out);
  return ec == std::errc() && end == token.data() + token.size() && !token.empty();
}

Result<WarmRow> Parse(const std::string& text) {
  std::string line = text;
  if (!line.empty() && line.back() == '\n') line.pop_back();
  std::istringstream in(line);
  std::vector<std::string> tokens;
  for (std::string t; in >> t;) tokens.push_back(t);
  const auto bad = [](const std::string& why) {
    return InvalidArgument("warm: " + why +
                           " (want \"FILES_DONE FILES_TOTAL BYTES_DONE BYTES_TOTAL ERRORS "
                           "walking|reading|done\")");
  };
  if (tokens.size() != 6 || line.find('\n') != std::string::npos) return bad("not one report");
  WarmRow r;
  uint64_t* fields[] = {&r.files_done, &r.files_total, &r.bytes_done, &r.bytes_total, &r.errors};
  for (size_t i = 0; i < 5; ++i) {
    if (!ParseCount(tokens[i], fields[i])) return bad("'" + tokens[i] + "' is not a count");
  }
  if (tokens[5] != "walking" && tokens[5] != "reading" && tokens[5] != "done") {
    return bad("unknown state");
  }
  if (r.files_done > r.files_total || r.bytes_done > r.bytes_total) {
    return bad("more done than in total");
  }
  r.state = tokens[5];
  return r;
}

}  // namespace

WarmProgress::WarmProgress(AliveFn alive)
    : alive_(alive ? std::move(alive) : AliveFn(ProcessAlive)) {}

Status WarmProgress::Report(const Caller& who, const std::string& text) {
  if (who.pid <= 0) return NotPermitted("warm: the reporting process is not visible to the daemon");
  Result<WarmRow> parsed = Parse(text);
  if (!parsed.ok()) return parsed.status();
  WarmRow row = std::move(parsed).value();
  row.pid = who.pid;
  row.uid = who.uid;
  std::lock_guard lock(mu_);
  Prune();
  auto it = std::find_if(rows_.begin(), rows_.end(),
                         [&](const WarmRow& r) { return r.pid == who.pid && !r.ended; });
  if (it == rows_.end()) {
    const size_t mine = static_cast<size_t>(std::count_if(
        rows_.begin(), rows_.end(), [&](const WarmRow& r) { return r.uid == who.uid && !r.ended; }));
    if (who.uid != 0 && mine >= kMaxRunningPerUser) {
      return NoSpace("warm: " + std::to_string(mine) + " warms of this user already report");
    }
    rows_.push_back({});
    it = rows_.end() - 1;
  }
  row.seq = ++seq_;
  *it = std::move(row);
  return Status::Ok();
}

void WarmProgress::Prune() const {
  for (WarmRow& r : rows_) {
    if (!r.ended && !alive_(r.pid)) r.ended = true;
  }
  // An ended warm that never finished says nothing any more.
  std::erase_if(rows_, [](const WarmRow& r) { return r.ended && r.state != "done"; });
  // Of each user's finished rows, the newest kMaxFinished stay.
  std::map<uid_t, size_t> kept;
  std::vector<WarmRow> newest_first = rows_;
  std::sort(newest_first.begin(), newest_first.end(),
            [](const WarmRow& a, const WarmRow& b) { return a.seq > b.seq; });
  std::vector<uint64_t> drop;
  for (const WarmRow& r : newest_first) {
    if (r.ended && ++kept[r.uid] > kMaxFinished) drop.push_back(r.seq);
  }
  std::erase_if(rows_, [&](const WarmRow& r) {
    return std::find(drop.begin(), drop.end(), r.seq) != drop.end();
  });
}

std::vector<WarmRow> WarmProgress::Rows(uid_t viewer) const {
  std::lock_guard lock(mu_);
  Prune();
  std::vector<WarmRow> out;
  for (const WarmRow& r : rows_) {
    if (viewer == 0 || r.uid == viewer) out.push_back(r);
  }
  std::sort(out.begin(), out.end(),
            [](const WarmRow& a, const WarmRow& b) { return a.seq < b.seq; });
  return out;
}

nlohmann::json WarmProgress::Json(uid_t viewer) const {
  nlohmann::json rows = nlohmann::json::array();
  for (const WarmRow& r : Rows(viewer)) {
    rows.push_back({{"pid", r.pid},
                    {"uid", r.uid},
                    {"state", r.state},
                    {"running", !r.ended},
                    {"files_done", r.files_done},
                    {"files_total", r.files_total},
                    {"bytes_done", r.bytes_done},
                    {"bytes_total", r.bytes_total},
                    {"errors", r.errors}});
  }
  return rows;
}

}  // namespace epochfs::control
