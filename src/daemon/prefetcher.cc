#include "prefetcher.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>

#include "epochfs/common/log.h"

namespace epochfs {
namespace {

constexpr uint64_t kRefusedForNs = 1'000'000'000;  // a refused object waits this long
constexpr auto kIdleWait = std::chrono::milliseconds(100);
// How long Stop waits for the loads in flight before it lets them go.
constexpr auto kStopGrace = std::chrono::milliseconds(500);
// Hints asked for per load taken: the first that can be loaded is; the
// rest are asked for again next time (asking for `depth` of them cost every
// take the whole depth's worth of policy work).
constexpr size_t kHintsPerTake = 8;

}  // namespace

// One worker wakes per kick (a read calls this: waking all would cost every
// read a context switch per worker); a worker that finds work wakes the next.
void Prefetcher::Kick() {
  // Until a job's samples are known there is nothing to prefetch: reads of a
  // mount no job uses cost no wake-up.
  if (!armed_.load(std::memory_order_relaxed)) return;
  activity_.fetch_add(1, std::memory_order_relaxed);
  // Our loads alone fill the target: each worker takes its next load as it
  // finishes one, so a worker woken now would find no room (two thread
  // switches for nothing, at every read and every load taken).
  if (full_.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard lock(wake_mu_);
    ++kicks_;
  }
  cv_.notify_one();
}

void Prefetcher::Start() {
  if (depth_ == 0 || !threads_.empty()) return;
  returned_.assign(depth_, false);
  for (uint32_t i = 0; i < depth_; ++i) {
    threads_.emplace_back([this, i] {
      Worker(i == 0);
      std::lock_guard lock(wake_mu_);
      returned_[i] = true;
      ++returned_n_;
      stopped_cv_.notify_all();  // under the lock: Stop may destroy us once it sees this
    });
  }
}

void Prefetcher::Stop() {
  {
    std::lock_guard lock(wake_mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (threads_.empty()) return;
  // The loads in flight may finish (a few LOWER round trips); one that LOWER
  // does not answer by then is let go: its thread never returns (the gate
  // holds it once LOWER answers), so it is not waited for.
  std::unique_lock lock(wake_mu_);
  stopped_cv_.wait_for(lock, kStopGrace, [&] { return returned_n_ == threads_.size(); });
  lock.unlock();
  const uint32_t held = cache_.ReleasePrefetch();
  lock.lock();
  stopped_cv_.wait(lock, [&] { return returned_n_ + held >= threads_.size(); });
  lock.unlock();
  for (size_t i = 0; i < threads_.size(); ++i) {
    if (returned_[i]) {
      threads_[i].join();
    } else {
      threads_[i].detach();
    }
  }
  threads_.clear();
}

void Prefetcher::Worker(bool polls) {
  pthread_setname_np(pthread_self(), "prefetch");  // as top -H and /proc show it
  store::PrefetchScope lane;  // LOWER calls on the prefetch lane (lower_gate.h)
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(wake_mu_);
      const auto woken = [&] { return stop_ || kicks_ != seen; };
      if (polls) {
        cv_.wait_for(lock, kIdleWait, woken);
      } else {
        cv_.wait(lock, woken);
      }
      if (stop_) return;
      seen = kicks_;
    }
    // Loads first; a batch of stats ahead only when there is nothing to
    // load, and the loads are looked for again after each batch.
    for (;;) {
      if (std::optional<Task> t = Take()) {
        Kick();  // there may be more: the next worker looks
        if (t->file.hidden) {
          Done(*t, store::MissingOnLower(t->file.rel), 0);
        } else {
          store::GetRequest req{t->hint.object, t->file.rel, {}, t->hint.job, t->hint.sample};
          req.as = t->file.as;
          uint64_t bytes = 0;
          Result<bool> r = cache_.Prefetch(req, &bytes);
          Done(*t, r, bytes);
        }
      } else if (std::vector<SampleFile> files = TakeStats(); !files.empty()) {
        Kick();  // the next names: another worker, side by side
        for (const SampleFile& f : files) stat_ahead_(f);
        StatsDone();
      } else {
        break;
      }
      std::lock_guard lock(wake_mu_);
      if (stop_) return;
    }
  }
}

std::vector<SampleFile> Prefetcher::TakeStats() {
  if (!stat_ahead_) return {};
  // The window found nothing new: it moves only with reads and loads, so the
  // policy is asked again once kStatsPerTake of them have happened (a read
  // kicks a worker: asking at each would cost every read the query).
  const uint64_t activity = activity_.load(std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  // A batch of stats is a LOWER call in flight as a load is: within the target.
  if (InFlightLocked() + cache_.demand_loads() >= target_.target()) return {};
  if (stats_dry_ && activity - dry_at_ < kStatsPerTake) return {};
  std::vector<cache::PrefetchHint> loading;
  loading.reserve(claimed_.size());
  for (const auto& [id, hint] : claimed_) loading.push_back(hint);
  // The window: the next kStatWindow names of each job not read, resident or
  // loading, stat'ed ahead or not (a name stat'ed ahead still takes its
  // place: the stat-ahead runs at most kStatWindow names before the reader).
  const std::vector<cache::PrefetchHint> hints = cache_.StatHints(
      kStatWindow,
      [&](cache::ObjectId o) { return claimed_.count(o) != 0 || failed_.count(o) != 0; },
      loading);
  std::vector<SampleFile> files;
  for (const cache::PrefetchHint& h : hints) {
    if (files.size() == kStatsPerTake) break;
    if (statted_.count(h.object) != 0) continue;
    if (statted_.size() >= kStatRemembered) statted_.clear();  // the bound: some stat'ed again
    statted_.insert(h.object);
    std::optional<SampleFile> file = path_of_(h.job, h.sample);
    if (file && !file->hidden) files.push_back(std::move(*file));
  }
  stats_dry_ = files.empty();
  dry_at_ = activity;
  if (!files.empty()) {
    ++statting_;
    full_.store(InFlightLocked() >= target_.target(), std::memory_order_relaxed);
  }
  return files;
}

void Prefetcher::StatsDone() {
  bool room = false;
  {
    std::lock_guard lock(mu_);
    --statting_;
    room = InFlightLocked() < target_.target();
    full_.store(!room, std::memory_order_relaxed);
  }
  if (room) Kick();
}

std::optional<Prefetcher::Task> Prefetcher::Take() {
  std::lock_guard lock(mu_);
  if (InFlightLocked() + cache_.demand_loads() >= target_.target()) return std::nullopt;
  struct Full {  // full_ as it is when Take returns
    const Prefetcher& p;
    ~Full() { p.full_.store(p.InFlightLocked() >= p.target_.target(), std::memory_order_relaxed); }
  } full{*this};
  const uint64_t now = store::NowNs();
  if (now - refused_since_ns_ >= kRefusedForNs) {
    refused_.clear();
    refused_since_ns_ = now;
  }
  loading_.clear();  // kept between takes: no allocation per take
  for (const auto& [id, hint] : claimed_) loading_.push_back(hint);
  std::vector<cache::PrefetchHint> hints = cache_.PrefetchHints(
      std::min<size_t>(depth_, kHintsPerTake),
      [&](cache::ObjectId o) {
        return claimed_.count(o) != 0 || refused_.count(o) != 0 || failed_.count(o) != 0;
      },
      loading_);
  for (const cache::PrefetchHint& h : hints) {
    if (h.size > cache_.max_object_bytes()) {  // streamed, never cached
      failed_.insert(h.object);
      continue;
    }
    // Memory: the first hint that does not fit waits (the later ones are read later).
    const uint64_t bytes = ByteEstimateLocked(h);
    if (inflight_ != 0 && (bytes == 0 || inflight_bytes_ + bytes > cache_.max_object_bytes() / 2)) {
      return std::nullopt;
    }
    std::optional<SampleFile> file = path_of_(h.job, h.sample);
    if (!file) {  // the job went meanwhile
      refused_.insert(h.object);
      continue;
    }
    claimed_.emplace(h.object, h);
    estimate_.emplace(h.object, bytes);
    inflight_bytes_ += bytes;
    ++inflight_;
    return Task{h, std::move(*file), target_.generation(), now};
  }
  return std::nullopt;
}

uint64_t Prefetcher::ByteEstimateLocked(const cache::PrefetchHint& h) const {
  if (h.size != 0) return h.size;
  return loaded_ == 0 ? 0 : std::max<uint64_t>(1, loaded_bytes_ / loaded_);
}

void Prefetcher::Done(const Task& t, const Result<bool>& r, uint64_t bytes) {
  // NotFound: missing, not a regular file, or not the job owner's to reach
  // or read (as a missing file, by design): unreadable. InvalidArgument:
  // too large to cache whole (CacheFront::Prefetch): never prefetched, but
  // readable (in blocks; streamed with cache.block_size = 0), so not
  // reported. Anything else (an I/O error, a timeout) may pass.
  const bool unreadable = !r.ok() && r.status().code() == Code::kNotFound;
  const bool never = unreadable || (!r.ok() && r.status().code() == Code::kInvalidArgument);
  bool grew = false;  // the target rose: more workers may start
  activity_.fetch_add(1, std::memory_order_relaxed);  // the window may have moved
  {
    std::lock_guard lock(mu_);
    // What the policy loads ahead may have changed (this load admitted or
    // refused, the budget's room with it): the stat window is asked again
    // at the next take, not only after kStatsPerTake more reads. Were it
    // not, a window found dry while the last loads were in flight stayed
    // dry once nothing was read any more.
    stats_dry_ = false;
    claimed_.erase(t.hint.object);
    --inflight_;
    inflight_bytes_ -= estimate_[t.hint.object];
    estimate_.erase(t.hint.object);
    if (bytes != 0) {
      ++loaded_;
      loaded_bytes_ += bytes;
      const uint64_t now = store::NowNs();
      if (target_.OnLoad(t.generation, now - t.start_ns, now)) {
        grew = target_.target() > InFlightLocked();
        if (log::Enabled(log::Level::kDebug)) {
          log::Debug("prefetch: " + std::to_string(target_.target()) + " loads in flight at most");
        }
      }
    }
    full_.store(InFlightLocked() >= target_.target(), std::memory_order_relaxed);
    if (never) {
      failed_.insert(t.hint.object);
    } else if (!r.ok() || !r.value()) {
      refused_.insert(t.hint.object);
    }
  }
  if (unreadable && on_unreadable_) on_unreadable_(t.hint, t.file.rel, r.status());
  if (grew) Kick();
}

uint32_t Prefetcher::target() const {
  std::lock_guard lock(mu_);
  return target_.target();
}

}  // namespace epochfs
