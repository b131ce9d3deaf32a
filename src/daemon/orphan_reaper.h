// OrphanReaper: the daemon's thread that calls JobRegistry::ReapOrphans once
// a second (jobs.orphan_grace) and tells `on_removed` each job it removed.
// Thread safety: Start/Stop from one thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>
#include <mutex>
#include <thread>

#include "epochfs/control/job_registry.h"

namespace epochfs {

class OrphanReaper {
 public:
  using RemovedFn = std::function<void(const std::string& job)>;
  OrphanReaper(control::JobRegistry& registry, uint64_t grace_ns, RemovedFn on_removed = {})
      : registry_(registry), grace_ns_(grace_ns), on_removed_(std::move(on_removed)) {}
  ~OrphanReaper() { Stop(); }
  OrphanReaper(const OrphanReaper&) = delete;
  OrphanReaper& operator=(const OrphanReaper&) = delete;

  void Start();
  void Stop();

 private:
  control::JobRegistry& registry_;
  const uint64_t grace_ns_;
  const RemovedFn on_removed_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace epochfs
