#include "epochfs/control/pid_namespace.h"

#include <dirent.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace epochfs::control {
namespace {

// The target of <proc>/<who>/ns/pid ("pid:[4026531836]"); "" when unreadable.
std::string PidNamespace(const std::string& proc, const std::string& who) {
  char buf[PATH_MAX];
  const std::string link = proc + "/" + who + "/ns/pid";
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// The NSpid line of <proc>/<pid>/status: the process's pid in each namespace
// it is in, outermost first. Empty when unreadable.
std::vector<pid_t> NsPids(const std::string& proc, const std::string& pid) {
  std::ifstream in(proc + "/" + pid + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    std::vector<pid_t> out;
    long v = 0;
    while (fields >> v) out.push_back(static_cast<pid_t>(v));
    return out;
  }
  return {};
}

}  // namespace

Result<std::vector<pid_t>> PidsOfWriter(const std::vector<pid_t>& written, pid_t writer,
                                        const std::string& proc_root) {
  if (writer <= 0) return written;
  const std::string own = PidNamespace(proc_root, "self");
  const std::string theirs = PidNamespace(proc_root, std::to_string(writer));
  if (own.empty() || theirs.empty() || own == theirs) return written;
  const std::vector<pid_t> writer_ids = NsPids(proc_root, std::to_string(writer));
  if (writer_ids.size() < 2) return written;  // no nesting shown: nothing to translate
  const size_t level = writer_ids.size() - 1;

  // The writer's namespace: its number → the daemon's, scanned once.
  std::unordered_map<pid_t, pid_t> in_theirs{{writer_ids[level], writer}};
  bool scanned = false;
  auto scan = [&] {
    scanned = true;
    DIR* dir = ::opendir(proc_root.c_str());
    if (dir == nullptr) return;
    while (const dirent* e = ::readdir(dir)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end != '\0') continue;
      if (PidNamespace(proc_root, e->d_name) != theirs) continue;
      const std::vector<pid_t> ids = NsPids(proc_root, e->d_name);
      if (ids.size() == level + 1) in_theirs.emplace(ids[level], static_cast<pid_t>(pid));
    }
    ::closedir(dir);
  };
  std::vector<pid_t> out;
  out.reserve(written.size());
  for (pid_t p : written) {
    auto it = in_theirs.find(p);
    if (it == in_theirs.end() && !scanned) {
      scan();
      it = in_theirs.find(p);
    }
    if (it == in_theirs.end()) {
      return InvalidArgument("pid " + std::to_string(p) +
                             ": no such process in the writer's pid namespace");
    }
    out.push_back(it->second);
  }
  return out;
}

}  // namespace epochfs::control
