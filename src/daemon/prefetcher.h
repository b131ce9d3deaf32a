// Prefetcher: loads what the jobs will read next before they ask for it.
//
// `depth` worker threads ask the cache front for the policy's prefetch hints
// (Policy::PrefetchHints: not resident, read soonest, worth admitting now)
// and load them (CacheFront::Prefetch: one flight shared with any reader who
// asks meanwhile). Readers go first: a prefetch starts only while the
// prefetches and readers' misses in flight together are fewer than `depth`,
// so a reader's miss never queues behind a prefetch (and the daemon keeps at
// least one LOWER worker for readers: see the daemon). The workers sleep until
// a read or a declaration (Kick: one worker wakes, and each that finds work
// wakes the next) or 100 ms pass. An object the policy then
// refuses, or whose load fails, is not tried again for a second.
//
// The policy names objects by id; their LOWER paths come from the jobs'
// sample lists as they are resolved (Remember). Memory: one path per distinct
// sample file of any job, for the life of the mount.
//
// Thread safety: thread-safe. Start after any fork; Stop before the cache
// front goes. Lock order: mu_ → the cache front's locks; Kick takes wake_mu_
// only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "epochfs/store/cache_front.h"

namespace epochfs {

class Prefetcher {
 public:
  Prefetcher(store::CacheFront& cache, uint32_t depth) : cache_(cache), depth_(depth) {}
  ~Prefetcher() { Stop(); }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // `rel` is the LOWER path of object `id` (a sample of some job).
  void Remember(cache::ObjectId id, const std::string& rel);
  // Something changed (a read, a declaration): the workers look again.
  void Kick();
  void Start();
  void Stop();

 private:
  struct Task {
    cache::PrefetchHint hint;
    std::string rel;
  };
  void Worker();
  std::optional<Task> Take();
  void Done(const Task& t, bool keep_trying);

  store::CacheFront& cache_;
  const uint32_t depth_;

  std::atomic<bool> armed_{false};  // a path is known: Kick wakes workers
  std::mutex paths_mu_;
  std::unordered_map<cache::ObjectId, std::string> paths_;  // guarded by paths_mu_

  std::mutex mu_;
  std::unordered_set<cache::ObjectId> claimed_;  // loads of ours in flight
  std::unordered_set<cache::ObjectId> refused_;  // not tried again until cleared
  uint64_t refused_since_ns_ = 0;
  uint32_t inflight_ = 0;  // == claimed_.size()

  std::mutex wake_mu_;
  std::condition_variable cv_;
  uint64_t kicks_ = 0;  // guarded by wake_mu_
  bool stop_ = false;   // guarded by wake_mu_
  std::vector<std::thread> threads_;
};

}  // namespace epochfs
