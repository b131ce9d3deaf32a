// OrphanReaper: the daemon's thread that calls JobRegistry::ReapOrphans once
// a second (jobs.orphan_grace), `removed` for each job it reaped (the daemon
// tells the kernel that the directory is gone), then `tick` (other
// once-a-second checks: the cache-need warning). Thread safety: Start/Stop
// from one thread; the callbacks run on the reaper thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "epochfs/control/job_registry.h"
#include "ticker.h"

namespace epochfs {

class OrphanReaper {
 public:
  OrphanReaper(control::JobRegistry& registry, uint64_t grace_ns,
               std::function<void(const std::string&)> removed = {},
               std::function<void()> tick = {})
      : registry_(registry),
        grace_ns_(grace_ns),
        removed_(std::move(removed)),
        tick_(std::move(tick)) {}
  ~OrphanReaper() { Stop(); }
  OrphanReaper(const OrphanReaper&) = delete;
  OrphanReaper& operator=(const OrphanReaper&) = delete;

  void Start();
  void Stop();

 private:
  control::JobRegistry& registry_;
  const uint64_t grace_ns_;
  const std::function<void(const std::string&)> removed_;  // job name
  const std::function<void()> tick_;
  Ticker ticker_;  // last: stopped before the members it calls
};

}  // namespace epochfs
