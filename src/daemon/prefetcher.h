// Prefetcher: loads what the jobs will read next before they ask for it.
//
// `depth` worker threads (named "prefetch") ask the cache front for the policy's prefetch hints
// (Prefetching::PrefetchHints: not resident, read soonest, worth admitting now)
// and load them (CacheFront::Prefetch: one flight shared with any reader who
// asks meanwhile), each one load at a time: on a store where every request
// waits (NFS, an s3 mount) the loads in flight, not one load's latency, set
// the rate. How many run at once is found from the loads' times
// (cache::InFlightTarget, from 16, between 4 and `depth`): many where loads
// side by side take as long as one alone (a latency store), few where each
// one more lengthens all (a disk or a throttled device, whose bandwidth the
// readers' own misses need). Each worker's LOWER calls go to the gate's prefetch lane
// (store::PrefetchScope; the daemon's gate runs them on the worker itself,
// LowerGateOptions::prefetch_inline), so a reader's call never queues behind
// a prefetch's. Readers go
// first: a prefetch starts only while the prefetches and readers' misses in
// flight together are fewer than the target. Memory: the bytes of the loads in
// flight (each hint's size, or while it is not known the mean size of the
// loads so far) stay within an eighth of the budget (half of
// CacheFront::max_object_bytes()), whatever `depth`; at least one load runs,
// and while no size is known at all, only one. The workers sleep until
// a read or a declaration (Kick: one worker wakes, and each that finds work
// wakes the next; no one while the loads in flight fill the target, as the
// worker of each takes the next when it finishes) or, for one of them,
// 100 ms pass. An object the policy then
// refuses, or whose load fails, is not tried again for a second; one that
// cannot be loaded at all (missing on LOWER, not a regular file, not the
// job owner's to reach or read: the samples list names files unchecked)
// never again, and the unreadable listener hears
// of it once (a line in its job's status). A file too large to cache whole is
// never prefetched either (a reader reads it in blocks), and not reported.
//
// The policy names objects by id and says which job reads each as which
// sample; the path source gives that sample's LOWER path (the jobs' samples
// lists, kept by the daemon's job sink) and the job owner's credentials: a
// prefetch loads only a sample that passed the samples check for the job
// that declared it (not hidden) and a file that owner may read; any other
// is unreadable as a missing file is, and nothing of it is read.
//
// Attributes ahead (SetStatAhead): a declared file the policy will not
// load ahead (Prefetching::StatHints: a budget too small for it, or no room
// for a load now) has its attributes fetched instead, by the workers when
// they find nothing to load, so that the reader's LOOKUP and GETATTR of it
// wait for no LOWER call. The window: the next kStatWindow names of each
// job in reading order that are not read, resident or loading (a name
// already stat'ed keeps its place, so the stats run at most kStatWindow
// names ahead of the reader); each name is stat'ed once, kStatsPerTake at a
// time per worker (several workers side by side), on the prefetch lane;
// a worker looks for a load again after each batch. Once the window holds
// nothing new, the policy is asked again after a load of ours ends, or
// after kStatsPerTake reads (each read kicks a worker: a query at each would
// cost every read).
// The stat-ahead function is the daemon's (KnownLower::Ahead): set only
// under "immutable", where the attributes are remembered; under "open" none
// is set (each lookup asks LOWER anyway) and nothing is stat'ed ahead.
// Hidden samples (their job's owner may not reach them) are never stat'ed;
// the others are names the owner reaches, and what is remembered of them
// answers any user's lookup only after the kernel's own permission checks
// of the directories on the way, and on a shared mount only until
// fuse.permission_timeout passes (docs/security.md). Memory: the ids of the
// names stat'ed (at most kStatRemembered, ~40 bytes each, 2.6 MB at most;
// past it the set starts again), and what KnownLower keeps (~100 bytes a
// path, within cache.metadata_entries).
//
// Stop: the workers return once their loads in flight finish; those LOWER
// has not answered within half a second are let go (CacheFront::
// ReleasePrefetch: the gate never lets them return), so a hung LOWER does not
// hold the unmount. Without a gate (lower.timeout = 0) Stop waits for them.
//
// Thread safety: thread-safe. Start after any fork; Stop before the cache
// front goes. Lock order: mu_ → the cache front's locks and the path
// source's; Kick takes wake_mu_ only.
#pragma once

#include <atomic>
#include <memory>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "epochfs/cache/inflight_target.h"
#include "epochfs/store/cache_front.h"

namespace epochfs {

// Where a job's sample is on LOWER, and as whom it is loaded.
struct SampleFile {
  std::string rel;
  // Its job's owner may not reach it: never loaded, reported as a file that
  // does not exist (store::MissingOnLower).
  bool hidden = false;
  // Loaded only if these may read it (GetRequest::as); null: root's job.
  std::shared_ptr<const Credentials> as;
};

class Prefetcher {
 public:
  // The LOWER file of sample `sample` of job `job`, if known.
  using PathSource = std::function<std::optional<SampleFile>(cache::JobId job, uint32_t sample)>;
  Prefetcher(store::CacheFront& cache, uint32_t depth, PathSource paths)
      : cache_(cache), depth_(depth), path_of_(std::move(paths)),
        target_(depth, std::min<uint32_t>(depth, kStartInFlight), kBeginInFlight) {}
  // The fewest loads in flight the target comes down to, and the number it
  // begins at (InFlightTarget): a latency store reaches `depth` three rounds of
  // loads sooner than from 4 (each round a load's time: three LOWER calls),
  // and a queue comes down to 4 from the level above this one.
  static constexpr uint32_t kStartInFlight = 4;
  static constexpr uint32_t kBeginInFlight = 16;
  // The loads in flight it aims at now (tests, the log).
  uint32_t target() const;
  ~Prefetcher() { Stop(); }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // A job's samples are known: from now on Kick wakes the workers.
  void Arm() { armed_.store(true, std::memory_order_relaxed); }
  // Told, once per object, that sample `hint.sample` of job `hint.job` at
  // `rel` cannot be loaded, and why. REQUIRES: set before Start.
  using UnreadableListener =
      std::function<void(const cache::PrefetchHint& hint, const std::string& rel, const Status& why)>;
  void SetUnreadableListener(UnreadableListener fn) { on_unreadable_ = std::move(fn); }
  // Fetches the attributes of a declared file ahead of its read (above).
  // REQUIRES: set before Start; unset: none are.
  using StatAhead = std::function<void(const SampleFile& file)>;
  void SetStatAhead(StatAhead fn) { stat_ahead_ = std::move(fn); }
  static constexpr size_t kStatWindow = 16;      // names ahead per job
  static constexpr size_t kStatsPerTake = 8;     // names one worker stats in turn
  static constexpr size_t kStatRemembered = 1 << 16;
  // Something changed (a read, a declaration): the workers look again.
  void Kick();
  void Start();
  void Stop();

 private:
  struct Task {
    cache::PrefetchHint hint;
    SampleFile file;
    uint64_t generation = 0;  // the target's when taken
    uint64_t start_ns = 0;
  };
  // `polls`: this worker also looks every kIdleWait without a kick (one
  // does; the others sleep until kicked).
  void Worker(bool polls);
  std::optional<Task> Take();
  // Up to kStatsPerTake declared files to stat ahead (marked as done), only
  // when the target has room: a batch counts as one load in flight (its
  // stats go one at a time) until StatsDone.
  std::vector<SampleFile> TakeStats();
  void StatsDone();
  // REQUIRES: mu_ held. Our LOWER calls in flight: loads and stat batches.
  uint32_t InFlightLocked() const { return inflight_ + statting_; }
  void Done(const Task& t, const Result<bool>& r, uint64_t bytes);
  // REQUIRES: mu_ held. The bytes a load of `h` will hold: its size, else the
  // mean of the loads so far; 0 when neither is known.
  uint64_t ByteEstimateLocked(const cache::PrefetchHint& h) const;

  store::CacheFront& cache_;
  const uint32_t depth_;
  PathSource path_of_;
  UnreadableListener on_unreadable_;
  StatAhead stat_ahead_;

  std::atomic<bool> armed_{false};  // a samples list is known: Kick wakes workers
  // Our loads and stat batches in flight reach the target (as of the last
  // Take, TakeStats, StatsDone or Done): Kick wakes no one, as the worker of
  // each takes the next one when it finishes.
  mutable std::atomic<bool> full_{false};

  mutable std::mutex mu_;
  std::unordered_map<cache::ObjectId, cache::PrefetchHint> claimed_;  // loads of ours in flight
  std::unordered_set<cache::ObjectId> refused_;  // not tried again until cleared
  std::unordered_set<cache::ObjectId> failed_;   // never tried again
  std::unordered_set<cache::ObjectId> statted_;  // attributes fetched ahead
  // Kicks and loads done: a dry stat window (stats_dry_) is asked for again
  // after kStatsPerTake of them, or at once after a load ends (Done).
  std::atomic<uint64_t> activity_{0};
  bool stats_dry_ = false;  // guarded by mu_
  uint64_t dry_at_ = 0;     // guarded by mu_: activity_ then
  uint64_t refused_since_ns_ = 0;
  uint32_t inflight_ = 0;  // == claimed_.size()
  uint32_t statting_ = 0;  // stat batches in flight
  uint64_t inflight_bytes_ = 0;  // the estimates (ByteEstimate) of the claimed
  std::unordered_map<cache::ObjectId, uint64_t> estimate_;  // of each claimed
  uint64_t loaded_ = 0, loaded_bytes_ = 0;  // loads done, and their bytes
  cache::InFlightTarget target_;  // guarded by mu_
  std::vector<cache::PrefetchHint> loading_;  // guarded by mu_: Take's list of claimed_

  std::mutex wake_mu_;
  std::condition_variable cv_;
  uint64_t kicks_ = 0;  // guarded by wake_mu_
  bool stop_ = false;   // guarded by wake_mu_
  std::vector<std::thread> threads_;
  // Which workers have returned, and how many (guarded by wake_mu_; Stop).
  std::vector<bool> returned_;
  size_t returned_n_ = 0;
  std::condition_variable stopped_cv_;
};

}  // namespace epochfs
