// OrphanReaper: the daemon's thread that calls JobRegistry::ReapOrphans once
// a second (jobs.orphan_grace). Thread safety: Start/Stop from one thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "epochfs/control/job_registry.h"

namespace epochfs {

class OrphanReaper {
 public:
  OrphanReaper(control::JobRegistry& registry, uint64_t grace_ns)
      : registry_(registry), grace_ns_(grace_ns) {}
  ~OrphanReaper() { Stop(); }
  OrphanReaper(const OrphanReaper&) = delete;
  OrphanReaper& operator=(const OrphanReaper&) = delete;

  void Start();
  void Stop();

 private:
  control::JobRegistry& registry_;
  const uint64_t grace_ns_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace epochfs
