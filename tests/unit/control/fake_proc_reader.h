// FakeProcReader: an in-memory process table for attribution tests.
// Thread-safe (the Attributor reads it from several threads in some tests).
#pragma once

#include <map>
#include <mutex>

#include "epochfs/control/attribution.h"

namespace epochfs::control::testing {

class FakeProcTable {
 public:
  // A process owned by `uid` (default: set_default_uid's, initially 0).
  void Spawn(pid_t pid, pid_t ppid, uint64_t start) {
    std::lock_guard<std::mutex> l(mu_);
    procs_[pid] = ProcStat{ppid, start};
    owners_[pid] = default_uid_;
  }
  void SpawnAs(uid_t uid, pid_t pid, pid_t ppid, uint64_t start) {
    std::lock_guard<std::mutex> l(mu_);
    procs_[pid] = ProcStat{ppid, start};
    owners_[pid] = uid;
  }
  void set_default_uid(uid_t uid) {
    std::lock_guard<std::mutex> l(mu_);
    default_uid_ = uid;
  }
  void Exit(pid_t pid) {
    std::lock_guard<std::mutex> l(mu_);
    procs_.erase(pid);
  }
  // Reparents pid (its parent exited): like the kernel, to init.
  void Reparent(pid_t pid, pid_t new_ppid) {
    std::lock_guard<std::mutex> l(mu_);
    procs_[pid].ppid = new_ppid;
  }
  int reads() const {
    std::lock_guard<std::mutex> l(mu_);
    return reads_;
  }
  Result<ProcStat> Stat(pid_t pid) {
    std::lock_guard<std::mutex> l(mu_);
    ++reads_;
    auto it = procs_.find(pid);
    if (it == procs_.end()) return NotFound("no process");
    return it->second;
  }
  Result<ProcOwner> Owner(pid_t pid) {
    std::lock_guard<std::mutex> l(mu_);
    if (procs_.find(pid) == procs_.end()) return NotFound("no process");
    auto it = owners_.find(pid);
    const uid_t uid = it == owners_.end() ? 0 : it->second;
    return ProcOwner{uid, uid};
  }

 private:
  mutable std::mutex mu_;
  std::map<pid_t, ProcStat> procs_;
  std::map<pid_t, uid_t> owners_;
  int reads_ = 0;
  uid_t default_uid_ = 0;
};

// A ProcReader over a table the test keeps (and mutates) after handing the
// reader to an Attributor.
class FakeProcReader final : public ProcReader {
 public:
  explicit FakeProcReader(FakeProcTable* table) : table_(table) {}
  Result<ProcStat> Stat(pid_t pid) const override { return table_->Stat(pid); }
  Result<ProcOwner> Owner(pid_t pid) const override { return table_->Owner(pid); }

 private:
  FakeProcTable* table_;
};

}  // namespace epochfs::control::testing
