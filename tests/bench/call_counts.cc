#include "call_counts.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace latencyfs {
namespace {

const char* const kKindNames[kKinds] = {"lookup", "stat",     "open",   "read",  "opendir",
                                        "list",   "readlink", "statfs", "access"};

// The thread group of thread `tid`, from /proc; `tid` if unknown.
pid_t ReadProcessOf(pid_t tid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(tid) + "/status").c_str(), "r");
  if (f == nullptr) return tid;
  char line[256];
  pid_t tgid = tid;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "Tgid:", 5) == 0) {
      tgid = static_cast<pid_t>(std::strtol(line + 5, nullptr, 10));
      break;
    }
  }
  std::fclose(f);
  return tgid;
}

}  // namespace

pid_t CallCounts::ProcessOf(pid_t tid) {
  {
    std::lock_guard lk(mu_);
    if (auto it = process_of_.find(tid); it != process_of_.end()) return it->second;
  }
  const pid_t process = ReadProcessOf(tid);
  std::lock_guard lk(mu_);
  if (process_of_.size() >= 65536) process_of_.clear();
  process_of_[tid] = process;
  return process;
}

pid_t CallCounts::Begin(Kind kind, pid_t tid) {
  const pid_t process = ProcessOf(tid);
  std::lock_guard lk(mu_);
  for (Tally* t : {&all_, &by_process_[process]}) {
    ++t->calls[kind];
    t->max_in_flight = std::max(t->max_in_flight, ++t->in_flight);
  }
  return process;
}

void CallCounts::End(pid_t process) {
  std::lock_guard lk(mu_);
  --all_.in_flight;
  --by_process_[process].in_flight;
}

std::string CallCounts::Text(std::optional<pid_t> process) {
  Tally t;
  {
    std::lock_guard lk(mu_);
    if (!process) {
      t = all_;
    } else if (auto it = by_process_.find(*process); it != by_process_.end()) {
      t = it->second;
    }
  }
  std::string text;
  for (int k = 0; k < kKinds; ++k) {
    text += std::string(kKindNames[k]) + "=" + std::to_string(t.calls[k]) + " ";
  }
  return text + "in_flight=" + std::to_string(t.in_flight) +
         " max_in_flight=" + std::to_string(t.max_in_flight);
}

}  // namespace latencyfs
