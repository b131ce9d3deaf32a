#include "prefetcher.h"

#include <chrono>

namespace epochfs {
namespace {

constexpr uint64_t kRefusedForNs = 1'000'000'000;  // a refused object waits this long
constexpr auto kIdleWait = std::chrono::milliseconds(100);

}  // namespace

void Prefetcher::Remember(cache::ObjectId id, const std::string& rel) {
  {
    std::lock_guard lock(paths_mu_);
    paths_.try_emplace(id, rel);
  }
  armed_.store(true, std::memory_order_relaxed);
}

// One worker wakes per kick (a read calls this: waking all would cost every
// read a context switch per worker); a worker that finds work wakes the next.
void Prefetcher::Kick() {
  // Until a job's samples are known there is nothing to prefetch: reads of a
  // mount no job uses cost no wake-up.
  if (!armed_.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard lock(wake_mu_);
    ++kicks_;
  }
  cv_.notify_one();
}

void Prefetcher::Start() {
  if (depth_ == 0 || !threads_.empty()) return;
  for (uint32_t i = 0; i < depth_; ++i) threads_.emplace_back([this] { Worker(); });
}

void Prefetcher::Stop() {
  {
    std::lock_guard lock(wake_mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void Prefetcher::Worker() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(wake_mu_);
      cv_.wait_for(lock, kIdleWait, [&] { return stop_ || kicks_ != seen; });
      if (stop_) return;
      seen = kicks_;
    }
    while (std::optional<Task> t = Take()) {
      Kick();  // there may be more: the next worker looks
      store::GetRequest req{t->hint.object, t->rel, {}, t->hint.job, t->hint.sample};
      Result<bool> r = cache_.Prefetch(req);
      Done(*t, r.ok() && r.value());
      std::lock_guard lock(wake_mu_);
      if (stop_) return;
    }
  }
}

std::optional<Prefetcher::Task> Prefetcher::Take() {
  std::lock_guard lock(mu_);
  if (inflight_ + cache_.demand_loads() >= depth_) return std::nullopt;
  const uint64_t now = store::NowNs();
  if (now - refused_since_ns_ >= kRefusedForNs) {
    refused_.clear();
    refused_since_ns_ = now;
  }
  std::vector<cache::PrefetchHint> hints = cache_.PrefetchHints(
      depth_, [&](cache::ObjectId o) { return claimed_.count(o) != 0 || refused_.count(o) != 0; });
  for (const cache::PrefetchHint& h : hints) {
    std::string rel;
    {
      std::lock_guard plock(paths_mu_);
      auto it = paths_.find(h.object);
      if (it != paths_.end()) rel = it->second;
    }
    if (rel.empty() || h.size > cache_.max_object_bytes()) {  // unknown path, or streamed
      refused_.insert(h.object);
      continue;
    }
    claimed_.insert(h.object);
    ++inflight_;
    return Task{h, std::move(rel)};
  }
  return std::nullopt;
}

void Prefetcher::Done(const Task& t, bool keep_trying) {
  std::lock_guard lock(mu_);
  claimed_.erase(t.hint.object);
  --inflight_;
  if (!keep_trying) refused_.insert(t.hint.object);
}

}  // namespace epochfs
