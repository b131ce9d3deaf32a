#include "epochfs/store/cache_front.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include "epochfs/common/hash.h"
#include "epochfs/common/log.h"

namespace epochfs::store {

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

namespace {

// " (job J, sample S)" for debug lines, or "" for an unregistered reader.
std::string DebugWho(const GetRequest& req) {
  if (req.job == cache::kNoJob) return "";
  return " (job " + std::to_string(req.job) + ", sample " + std::to_string(req.sample) + ")";
}

}  // namespace

CacheFront::CacheFront(const Lower& lower, std::unique_ptr<cache::Policy> policy, uint64_t budget)
    : lower_(lower),
      ram_(budget),
      max_object_(std::min<uint64_t>(budget / 4, uint64_t{1} << 30)),
      policy_(std::move(policy)) {}

Result<ObjectRef> CacheFront::Get(const GetRequest& req) {
  if (ObjectRef hit = ram_.Find(req.id)) {
    if (hit->version == req.version) return ServeHit(req, std::move(hit));
    Invalidate(req.id);
  }

  std::promise<Result<ObjectRef>> promise;
  std::shared_future<Result<ObjectRef>> fut;
  bool leader = false;
  ObjectRef landed;
  {
    std::lock_guard lock(flights_mu_);
    auto it = flights_.find(req.id);
    if (it != flights_.end()) {
      fut = it->second;
    } else if (ObjectRef now = ram_.Find(req.id); now && now->version == req.version) {
      // A load finished between the Find above and here (it inserts before it
      // drops its flight): this is a hit, not a second load.
      landed = std::move(now);
    } else {
      fut = promise.get_future().share();
      flights_.emplace(req.id, fut);
      leader = true;
    }
  }
  if (landed) return ServeHit(req, std::move(landed));
  if (!leader) {
    c_.coalesced.fetch_add(1, std::memory_order_relaxed);
    if (log::Enabled(log::Level::kDebug)) log::Debug("join " + req.rel + DebugWho(req));
    return fut.get();
  }
  Result<ObjectRef> r = Load(req);
  {
    std::lock_guard lock(flights_mu_);
    flights_.erase(req.id);
  }
  promise.set_value(r);
  return r;
}

Result<ObjectRef> CacheFront::ServeHit(const GetRequest& req, ObjectRef hit) {
  c_.hits.fetch_add(1, std::memory_order_relaxed);
  if (log::Enabled(log::Level::kDebug)) log::Debug("hit " + req.rel + DebugWho(req));
  std::lock_guard lock(policy_mu_);
  cache::Access a{req.id, hit->data.size(), req.job, req.sample, NowNs()};
  // The store changes only under policy_mu_: look again. Evicted since the
  // caller's Find, the policy has forgotten the object, so this read is a miss
  // for it (of bytes already in hand, which it may admit again); otherwise the
  // policy would be told of a hit on an object it does not know.
  if (ram_.Find(req.id)) {
    ApplyLocked(policy_->OnHit(a), nullptr);
  } else {
    ApplyLocked(policy_->OnMiss(a, 0), hit);
  }
  return hit;
}

Result<ObjectRef> CacheFront::Load(const GetRequest& req) {
  const uint64_t start = NowNs();
  auto fail = [this](Status s) -> Result<ObjectRef> {
    c_.lower_errors.fetch_add(1, std::memory_order_relaxed);
    return s;
  };
  auto fd = lower_.OpenFile(req.rel);
  if (!fd.ok()) return fail(fd.status());
  auto fst = lower_.FStat(fd.value().get());
  if (!fst.ok()) return fail(fst.status());
  const struct stat st = fst.value();
  if (!S_ISREG(st.st_mode)) return fail(NotFound(req.rel + ": no longer a regular file"));
  auto data = lower_.ReadWhole(fd.value().get(), static_cast<uint64_t>(st.st_size));
  if (!data.ok()) {
    log::Warn(req.rel + ": " + data.status().message());
    return fail(data.status());
  }
  auto obj = std::make_shared<Object>();
  obj->id = req.id;
  obj->version = {static_cast<uint64_t>(st.st_size),
                  st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec};
  obj->data = std::move(data).value();
  obj->checksum = Checksum(obj->data.data(), obj->data.size());
  const uint64_t now = NowNs();
  c_.misses.fetch_add(1, std::memory_order_relaxed);
  if (log::Enabled(log::Level::kDebug)) {
    log::Debug("miss " + req.rel + DebugWho(req) + ": " + std::to_string(obj->data.size()) +
               " bytes from lower in " + std::to_string((now - start) / 1000) + " us");
  }
  c_.bytes_read_lower.fetch_add(obj->data.size(), std::memory_order_relaxed);

  ObjectRef ref = std::move(obj);
  if (ref->version != req.version) {
    // The file changed since the caller's stat: serve what is there now, but
    // do not cache bytes that disagree with the attributes the kernel holds.
    return ref;
  }
  std::lock_guard lock(policy_mu_);
  cache::Access a{req.id, ref->data.size(), req.job, req.sample, now};
  if (ObjectRef resident = ram_.Find(req.id)) {
    // Another reader put it back meanwhile (see Get): the policy knows it as
    // resident, and admitting it again would fail in the store and make the
    // policy forget an object the store keeps.
    ApplyLocked(policy_->OnHit(a), nullptr);
    return resident->version == ref->version ? resident : ref;
  }
  ApplyLocked(policy_->OnMiss(a, now - start), ref);
  return ref;
}

void CacheFront::ApplyLocked(const cache::Decision& d, const ObjectRef& loaded) {
  for (cache::ObjectId victim : d.evict) {
    if (ram_.Erase(victim)) {
      c_.evictions.fetch_add(1, std::memory_order_relaxed);
      if (on_drop_) on_drop_(victim);
    }
  }
  if (d.admit && loaded) {
    if (ram_.Insert(loaded)) {
      c_.admissions.fetch_add(1, std::memory_order_relaxed);
    } else {
      c_.refused.fetch_add(1, std::memory_order_relaxed);
      policy_->OnDropped(loaded->id);
    }
  }
}

void CacheFront::Invalidate(cache::ObjectId id) {
  std::lock_guard lock(policy_mu_);
  if (ram_.Erase(id)) {
    c_.invalidations.fetch_add(1, std::memory_order_relaxed);
    if (on_drop_) on_drop_(id);
  }
  policy_->OnDropped(id);
}

Result<uint64_t> CacheFront::SetBudget(uint64_t bytes) {
  std::lock_guard lock(policy_mu_);
  Result<cache::Decision> d = policy_->SetBudget(bytes);
  if (!d.ok()) return d.status();
  // Evictions before a smaller budget, a larger budget before anything else:
  // a reader of ram().used() and ram().budget() never sees used > budget.
  // (Inserts take policy_mu_, held here.)
  const uint64_t before = c_.evictions.load(std::memory_order_relaxed);
  if (bytes > ram_.budget()) ram_.SetBudget(bytes);
  ApplyLocked(d.value(), nullptr);
  ram_.SetBudget(bytes);
  max_object_.store(std::min<uint64_t>(bytes / 4, uint64_t{1} << 30), std::memory_order_relaxed);
  return c_.evictions.load(std::memory_order_relaxed) - before;
}

void CacheFront::CountStreamedOpen() {
  c_.streamed_opens.fetch_add(1, std::memory_order_relaxed);
}

void CacheFront::CountStreamed(uint64_t bytes, bool error) {
  c_.bytes_read_lower.fetch_add(bytes, std::memory_order_relaxed);
  c_.streamed_bytes.fetch_add(bytes, std::memory_order_relaxed);
  if (error) c_.lower_errors.fetch_add(1, std::memory_order_relaxed);
}

Status CacheFront::WithPolicy(const std::function<Result<cache::Decision>(cache::Policy&)>& fn) {
  std::lock_guard lock(policy_mu_);
  Result<cache::Decision> d = fn(*policy_);
  if (!d.ok()) return d.status();
  ApplyLocked(d.value(), nullptr);
  return Status::Ok();
}

void CacheFront::ReadPolicy(const std::function<void(const cache::Policy&)>& fn) {
  std::lock_guard lock(policy_mu_);
  fn(*policy_);
}

CacheCounters CacheFront::counters() const {
  auto ld = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return {ld(c_.hits),      ld(c_.misses),       ld(c_.coalesced),
          ld(c_.bytes_read_lower), ld(c_.evictions), ld(c_.admissions),
          ld(c_.refused),   ld(c_.lower_errors), ld(c_.invalidations),
          ld(c_.streamed_opens), ld(c_.streamed_bytes)};
}

}  // namespace epochfs::store
