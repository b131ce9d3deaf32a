// CacheFront (cache_front.h): prefetch's way in. A prefetch is a load of its
// own flight (a reader who asks meanwhile joins it), reported to the policy
// with OnPrefetched; the hints skip what is in flight already.
#include <algorithm>
#include <vector>

#include "epochfs/cache/prefetching.h"
#include "epochfs/store/cache_front.h"
#include "epochfs/store/lower_gate.h"

namespace epochfs::store {

Result<bool> CacheFront::Prefetch(const GetRequest& req, uint64_t* loaded_bytes) {
  if (loaded_bytes != nullptr) *loaded_bytes = 0;
  std::promise<Result<ObjectRef>> promise;
  {
    std::lock_guard lock(flights_mu_);
    if (flights_.count(req.id) != 0 || ram_.Find(req.id)) return false;
    flights_.emplace(req.id, Flight{promise.get_future().share(), true, {}});
  }
  bool admitted = false;
  // Readers who join this flight wait on it: if the gate gives up on the
  // load's LOWER call (lower.timeout; this thread stays in the call until
  // LOWER answers), its watchdog answers them, as it would a reader's call.
  AnswerScope answer([this, &promise, id = req.id](const Status& s) {
    {
      std::lock_guard lock(flights_mu_);
      flights_.erase(id);
    }
    promise.set_value(s);
  });
  Result<ObjectRef> r = Load(req, /*prefetch=*/true, &admitted);
  if (answer.answered()) return r.ok() ? Status(Code::kTimedOut, req.rel) : r.status();
  {
    std::lock_guard lock(flights_mu_);
    flights_.erase(req.id);
  }
  promise.set_value(r);
  if (!r.ok()) return r.status();
  if (loaded_bytes != nullptr) *loaded_bytes = r.value()->data.size();
  return admitted;
}

std::vector<cache::PrefetchHint> CacheFront::PrefetchHints(
    size_t max, const std::function<bool(cache::ObjectId)>& skip,
    const std::vector<cache::PrefetchHint>& loading) {
  return Hints(/*stats=*/false, max, skip, loading);
}

std::vector<cache::PrefetchHint> CacheFront::StatHints(
    size_t max, const std::function<bool(cache::ObjectId)>& skip,
    const std::vector<cache::PrefetchHint>& loading) {
  return Hints(/*stats=*/true, max, skip, loading);
}

std::vector<cache::PrefetchHint> CacheFront::Hints(
    bool stats, size_t max, const std::function<bool(cache::ObjectId)>& skip,
    const std::vector<cache::PrefetchHint>& loading) {
  // The loads in flight, as a sorted list kept by each prefetch thread for
  // its next call: a set built at every call cost an allocation per load in
  // flight (a hundred and more on a latency store), most of a take's cost.
  thread_local std::vector<cache::ObjectId> flying;
  flying.clear();
  {
    std::lock_guard lock(flights_mu_);
    flying.reserve(flights_.size());
    for (const auto& [id, f] : flights_) flying.push_back(id);
  }
  std::sort(flying.begin(), flying.end());
  auto skipped = [&](cache::ObjectId o) {
    return std::binary_search(flying.begin(), flying.end(), o) || (skip && skip(o));
  };
  std::lock_guard lock(policy_mu_);
  cache::Prefetching* pf = policy_->prefetching();
  if (pf == nullptr) return {};
  return stats ? pf->StatHints(max, NowNs(), skipped, loading)
               : pf->PrefetchHints(max, NowNs(), skipped, loading);
}

}  // namespace epochfs::store
