#include "epochfs/store/cache_front.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "epochfs/cache/decision_apply.h"
#include "epochfs/cache/prefetching.h"
#include "epochfs/cache/read_order.h"
#include "epochfs/common/hash.h"
#include "epochfs/common/log.h"

namespace epochfs::store {

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

namespace {

// How many times a reader that joined loads not its own (CacheFront::GetOnce)
// loads again for itself, each time joining a load under way if there is one.
constexpr int kJoinRetries = 3;

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
  GetRequest asked = req;
  asked.asked_ns = NowNs();
  Result<ObjectRef> r = GetOnce(asked, kJoinRetries);
  read_wait_.Observe(NowNs() - asked.asked_ns);  // steady: never negative
  return r;
}

Result<ObjectRef> CacheFront::GetOnce(const GetRequest& req, int retries) {
  if (req.kernel_holds && !req.heard) {
    if (ObjectRef held = HitHeld(req)) return held;
  }
  if (ObjectRef hit = ram_.Find(req.id)) {
    if (hit->version != req.version) {
      // Heard of at an open of the version handed over: that is gone, and
      // the version now cached is not this reader's to drop. Its bytes may
      // still be those handed over (the caller compares them).
      if (req.heard) {
        if (!hit->handed_over) return hit;
        return Stale(req.rel + ": another version is cached now");
      }
      Invalidate(req.id);
    } else if (!hit->handed_over) {
      return req.heard ? hit : ServeHit(req, std::move(hit));
    } else if (req.kernel_holds && !req.heard && retries > 0) {
      return GetOnce(req, retries - 1);  // handed back since HitHeld looked: a hit now
    }  // handed over: loaded again below (Load refills the stub)
  }

  std::promise<Result<ObjectRef>> promise;
  std::shared_future<Result<ObjectRef>> fut;
  bool leader = false;
  bool joined_prefetch = false;
  bool theirs = false;  // joined a reader's load for another version
  ObjectRef landed;
  {
    std::lock_guard lock(flights_mu_);
    auto it = flights_.find(req.id);
    if (it != flights_.end()) {
      fut = it->second.done;
      joined_prefetch = it->second.prefetch;
      theirs = !joined_prefetch && it->second.version != req.version;
    } else if (ObjectRef now = ram_.Find(req.id);
               now && now->version == req.version && !now->handed_over) {
      // A load finished between the Find above and here (it inserts before it
      // drops its flight): this is a hit, not a second load.
      landed = std::move(now);
    } else {
      fut = promise.get_future().share();
      flights_.emplace(req.id, Flight{fut, false, req.version});
      leader = true;
    }
  }
  if (landed) return req.heard ? landed : ServeHit(req, std::move(landed));
  if (!leader) {
    // Joined: waits, no hit. A read heard of at its open was counted then
    // (its wait makes that open's hit a refill, below).
    if (!req.heard) c_.coalesced.fetch_add(1, std::memory_order_relaxed);
    if (log::Enabled(log::Level::kDebug)) log::Debug("join " + req.rel + DebugWho(req));
    Result<ObjectRef> r = fut.get();
    // A load for another version (another open's), or one that found
    // another version, is not this reader's answer, done or failed (a
    // block's load fails Stale when LOWER holds another version than it
    // asked for, which may be this reader's): it loads for itself. A block
    // is never served of another version.
    const bool other = theirs || (r.ok() && r.value()->version != req.version);
    // A refill of a whole object handed over: the bytes of another version
    // may be the same (the caller compares them), and loading again for
    // itself would read LOWER again for the same answer.
    if (req.heard && r.ok() && (req.length == 0 || !other)) {
      RefillOfHit(req, r.value()->data.size());
      return r;
    }
    if (!joined_prefetch && !other) return r;
    // A prefetch's load: the bytes are this read's, and the policy hears of
    // the read now, as a hit it waited for (counted in coalesced above, not
    // in hits). A failed prefetch is not this reader's answer either.
    if (joined_prefetch && r.ok() && !other) {
      return ServeHit(req, r.value(), cache::Access::Served::kJoined);
    }
    if (retries > 0) return GetOnce(req, retries - 1);
    if (other && req.length != 0) return Stale(req.rel + ": another version of the block is read");
    return r;
  }
  demand_loads_.fetch_add(1, std::memory_order_relaxed);
  Result<ObjectRef> r = LoadInSlot(req);
  demand_loads_.fetch_sub(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(flights_mu_);
    flights_.erase(req.id);
  }
  promise.set_value(r);
  Activity();
  return r;
}

Result<ObjectRef> CacheFront::ServeHit(const GetRequest& req, ObjectRef hit,
                                       cache::Access::Served served) {
  if (log::Enabled(log::Level::kDebug)) log::Debug("hit " + req.rel + DebugWho(req));
  {
    std::lock_guard lock(policy_mu_);
    ServeHitLocked(req, hit, served);
  }
  Activity();
  return hit;
}

void CacheFront::ServeHitLocked(const GetRequest& req, const ObjectRef& hit,
                                cache::Access::Served served) {
  if (unread_prefetched_.erase(req.id) != 0) {
    c_.prefetch_hits.fetch_add(1, std::memory_order_relaxed);
  }
  cache::Access a{req.id, hit->data.size(), req.job, req.sample, NowNs(), req.file};
  a.wait_ns = req.asked_ns != 0 && a.now_ns > req.asked_ns ? a.now_ns - req.asked_ns : 0;
  a.served = served;
  // The store changes only under policy_mu_: look again. Evicted since the
  // caller's Find, the policy has forgotten the object, so this read is a
  // miss for it (of bytes already in hand, which it may admit again);
  // otherwise the policy would be told of a hit on an object it does not
  // know.
  // Counted as the policy hears it: stats, policy and trace agree.
  if (ram_.Find(req.id)) {
    // A read that joined a load was counted (coalesced) when it joined.
    if (served != cache::Access::Served::kJoined) c_.hits.fetch_add(1, std::memory_order_relaxed);
    ApplyLocked(policy_->OnHit(a), nullptr);
  } else {
    c_.misses.fetch_add(1, std::memory_order_relaxed);
    ApplyLocked(policy_->OnMiss(a, 0), hit);
  }
  TierLocked(req, a, hit, false);
}

Result<ObjectRef> CacheFront::LoadInSlot(const GetRequest& req) {
  ReadSlots::Slot slot;
  if (read_slots_->slots() != 0) {
    ReadTurn turn;
    turn.job = req.job;
    {
      std::lock_guard lock(policy_mu_);
      if (const cache::ReadOrder* order = policy_->read_order(); order != nullptr) {
        turn.key = order->BytesLeft(req.job);
        for (cache::JobId o : order->Sharers(req.job)) turn.with.push_back(o);
      }
    }
    if (Status s = read_slots_->Acquire(turn, CancelScope::Current(), &slot); !s.ok()) return s;
  }
  return Load(req, /*prefetch=*/false);
}

Result<ObjectRef> CacheFront::Fetch(const GetRequest& req, bool prefetch, bool* from_tier) {
  *from_tier = false;
  // A reader's version is known from its stat: the second tier's copy of it
  // costs LOWER nothing.
  if (!prefetch) {
    if (ObjectRef t = TierRead(req, req.version)) {
      *from_tier = true;
      return t;
    }
  }
  const uint64_t start = NowNs();  // load_time(): LOWER's, not the tier's
  auto fail = [this, start](Status s) -> Result<ObjectRef> {
    c_.lower_errors.fetch_add(1, std::memory_order_relaxed);
    load_time_.Observe(NowNs() - start);
    return s;
  };
  const bool block = req.length != 0;
  // Opened, stat'ed and (a whole file, when small) read in one LOWER operation;
  // a prefetch with a second tier learns the version first and reads only
  // what the tier does not hold.
  uint64_t at_open = UINT64_MAX;
  if (block || (prefetch && tier_ != nullptr)) {
    at_open = 0;
  } else if (prefetch) {
    at_open = max_object_bytes();
  }
  // A prefetch takes the attributes the open's lookup left (no stat call of
  // its own: on a store where every call waits, one call of four per cold
  // file); a reader's load, LOWER's answer now.
  auto opened = lower_.OpenAndRead(req.rel, at_open, req.as,
                                   prefetch ? Lower::Attrs::kHeld : Lower::Attrs::kFresh);
  if (!opened.ok()) return fail(opened.status());
  const UniqueFd fd = std::move(opened.value().fd);
  const struct stat st = opened.value().st;
  std::optional<Result<std::vector<char>>> small = std::move(opened.value().data);
  if (!S_ISREG(st.st_mode)) return fail(NotFound(req.rel + ": not a regular file"));
  // Checked on the attributes of the file opened: no bytes of it are read
  // for a user who may not read them.
  if (req.as && !MayAccess(*req.as, st, kMayRead)) return fail(MissingOnLower(req.rel));
  if (prefetch && on_prefetch_attr_) on_prefetch_attr_(req.rel, st);
  // A samples list gives no sizes: a prefetch may name a file too large to
  // cache whole (a reader's open reads those in blocks).
  if (prefetch && !block && static_cast<uint64_t>(st.st_size) > max_object_bytes()) {
    return InvalidArgument(req.rel + ": larger than the largest cached object");
  }
  if (block && lower_.versions().Of(st) != req.version) {
    return Stale(req.rel + ": changed on LOWER while open (its blocks would mix versions)");
  }
  if (prefetch) {  // the version LOWER has now
    if (ObjectRef t = TierRead(req, lower_.versions().Of(st))) {
      *from_tier = true;
      return t;
    }
  }
  // A block: what the version's size leaves of [offset, offset + length).
  const uint64_t want =
      block ? std::min(req.length, req.version.size - std::min(req.offset, req.version.size)) : 0;
  auto data = block   ? lower_.ReadAt(fd.get(), want, req.offset)
              : small ? std::move(*small)
                      : lower_.ReadWhole(fd.get(), static_cast<uint64_t>(st.st_size));
  if (data.ok() && block) {
    if (data.value().size() != want) {
      return Stale(req.rel + ": shorter on LOWER than when it was opened");
    }
    // Written to during the read (its mtime moved): those bytes may mix.
    auto after = lower_.FStat(fd.get());
    if (!after.ok()) return fail(after.status());
    if (lower_.versions().Of(after.value()) != req.version) {
      return Stale(req.rel + ": changed on LOWER while a block of it was read");
    }
  }
  if (!data.ok()) {
    log::Warn(req.rel + ": " + data.status().message());
    return fail(data.status());
  }
  auto obj = std::make_shared<Object>();
  obj->id = req.id;
  obj->version = lower_.versions().Of(st);
  obj->data = std::move(data).value();
  obj->checksum = ObjectChecksum(obj->data.data(), obj->data.size());
  c_.bytes_read_lower.fetch_add(obj->data.size(), std::memory_order_relaxed);
  load_time_.Observe(NowNs() - start);
  if (prefetch) c_.prefetch_bytes.fetch_add(obj->data.size(), std::memory_order_relaxed);
  return ObjectRef(std::move(obj));
}

Result<ObjectRef> CacheFront::Load(const GetRequest& req, bool prefetch, bool* admitted) {
  const uint64_t start = NowNs();
  // The loads at LOWER when this one starts (RequestCost tells a queue from
  // a latency by them); this one counts until it returns.
  const uint32_t others = static_cast<uint32_t>(at_lower_.fetch_add(1, std::memory_order_relaxed));
  struct Leave {
    std::atomic<uint64_t>& n;
    ~Leave() { n.fetch_sub(1, std::memory_order_relaxed); }
  } leave{at_lower_};
  bool from_tier = false;
  Result<ObjectRef> fetched = Fetch(req, prefetch, &from_tier);
  if (!fetched.ok()) return fetched.status();
  const uint64_t now = NowNs();
  if (log::Enabled(log::Level::kDebug)) {
    log::Debug((prefetch ? "prefetch " : "miss ") + req.rel + DebugWho(req) + ": " +
               std::to_string(fetched.value()->data.size()) + " bytes from " +
               (from_tier ? "the disk tier" : "lower") + " in " +
               std::to_string((now - start) / 1000) + " us");
  }
  // Bytes from the disk tier: a miss of RAM, not a load LOWER measured.
  const bool loaded = !from_tier;
  auto measured = [&](uint64_t bytes) {
    if (loaded) LoadedLocked(bytes, start, now, others);
  };

  ObjectRef ref = std::move(fetched).value();
  if (prefetch) {
    std::lock_guard lock(policy_mu_);
    measured(ref->data.size());
    if (ram_.Find(req.id)) return ref;  // put back meanwhile: nothing to decide
    cache::Access a{req.id, ref->data.size(), req.job, req.sample, now, req.file};
    cache::Prefetching* pf = policy_->prefetching();
    ApplyLocked(pf != nullptr ? pf->OnPrefetched(a, now - start) : cache::Decision{}, ref);
    TierLocked(req, a, ref, loaded);
    const bool kept = ram_.Find(req.id) == ref;
    if (kept) {
      unread_prefetched_.insert(req.id);
      c_.prefetched.fetch_add(1, std::memory_order_relaxed);
    }
    if (admitted != nullptr) *admitted = kept;
    return ref;
  }
  if (req.heard && ref->version != req.version) ref = AsHandedOver(req, std::move(ref));
  if (ref->version != req.version) {
    // The file changed since the caller's stat: the bytes are returned, not
    // cached (they disagree with the attributes the kernel holds). They are
    // not this read's either: its caller refuses another version (an open
    // answers ESTALE, the kernel looks the name up again and opens again,
    // and that open is the read, counted then). So nothing is counted here
    // and the policy hears nothing: counting a miss would count one read
    // twice, and stats would disagree with the policy and its trace.
    return ref;
  }
  std::lock_guard lock(policy_mu_);
  measured(ref->data.size());
  cache::Access a{req.id, ref->data.size(), req.job, req.sample, now, req.file};
  a.wait_ns = req.asked_ns != 0 && now > req.asked_ns ? now - req.asked_ns : now - start;
  ObjectRef resident = ram_.Find(req.id);
  if (resident && resident->handed_over) {
    // The kernel lost pages of an object handed over to it: the bytes go
    // back in its place, if they are the ones handed over (see HandOver).
    if (resident->version == ref->version && resident->checksum == ref->checksum &&
        ram_.Replace(resident, ref)) {
      if (loaded) {
        c_.refill_bytes.fetch_add(ref->data.size(), std::memory_order_relaxed);
        LostByKernel(req.id, ref->data.size(), false);  // under policy_mu_: gate_mu_ is a leaf
      }
      if (!req.heard) {  // read from LOWER again: a refill, not a hit
        c_.refills.fetch_add(1, std::memory_order_relaxed);
        a.served = cache::Access::Served::kRefill;
        ApplyLocked(policy_->OnHit(a), nullptr);
      } else if (req.first_refill) {  // its open counted a hit: a refill after all
        RefillOfHitLocked(req, ref->data.size());
      }
      TierLocked(req, a, ref, loaded);
      return ref;
    }
    if (ram_.Erase(req.id)) {  // other bytes than handed over: the stub is stale
      c_.invalidations.fetch_add(1, std::memory_order_relaxed);
      policy_->OnDropped(req.id);
      LeftLocked(req.id);
    }
    resident = nullptr;
  }
  // Heard of at its open: the bytes are served, nothing is counted again and
  // nothing admitted (the policy decided at the open); but its hit was a
  // refill (the stub left RAM meanwhile: the bytes were read again).
  if (req.heard) {
    if (req.first_refill) RefillOfHitLocked(req, ref->data.size());
    TierLocked(req, a, ref, loaded);
    return resident && resident->version == ref->version ? resident : ref;
  }
  c_.misses.fetch_add(1, std::memory_order_relaxed);
  if (resident) {
    // Another reader put it back meanwhile (see Get): the policy knows it as
    // resident, and admitting it again would fail in the store and make the
    // policy forget an object the store keeps.
    ApplyLocked(policy_->OnHit(a), nullptr);
    TierLocked(req, a, ref, loaded);
    return resident->version == ref->version ? resident : ref;
  }
  ApplyLocked(policy_->OnMiss(a, now - start), ref);
  TierLocked(req, a, ref, loaded);
  return ref;
}

// The RAM store as a DecisionTarget (cache/decision_apply.h), under policy_mu_.
class CacheFront::RamTarget final : public cache::DecisionTarget {
 public:
  RamTarget(CacheFront& cf, const ObjectRef& loaded) : cf_(cf), loaded_(loaded) {}
  bool Evict(cache::ObjectId victim) override {
    if (!cf_.ram_.Erase(victim)) return false;
    cf_.c_.evictions.fetch_add(1, std::memory_order_relaxed);
    cf_.LeftLocked(victim);
    return true;
  }
  // A failed insert (no room, or the id taken meanwhile) is a refusal.
  Admission Admit(cache::ObjectId /*id*/) override {
    return cf_.ram_.Insert(loaded_) ? Admission::kAdmitted : Admission::kRefused;
  }

 private:
  CacheFront& cf_;
  const ObjectRef& loaded_;
};

void CacheFront::ApplyLocked(const cache::Decision& d, const ObjectRef& loaded) {
  RamTarget target(*this, loaded);
  const cache::Applied a = cache::ApplyDecision(
      d, loaded ? std::optional<cache::ObjectId>(loaded->id) : std::nullopt, *policy_, target);
  if (a.admitted) c_.admissions.fetch_add(1, std::memory_order_relaxed);
  if (a.refused) c_.refused.fetch_add(1, std::memory_order_relaxed);
}

void CacheFront::LeftLocked(cache::ObjectId id) {
  if (unread_prefetched_.erase(id) != 0) {
    c_.prefetch_wasted.fetch_add(1, std::memory_order_relaxed);
  }
  if (on_drop_) on_drop_(id);
}

void CacheFront::Invalidate(cache::ObjectId id) {
  std::lock_guard lock(policy_mu_);
  if (ram_.Erase(id)) {
    c_.invalidations.fetch_add(1, std::memory_order_relaxed);
    LeftLocked(id);
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
  {
    std::lock_guard lock(policy_mu_);
    Result<cache::Decision> d = fn(*policy_);
    if (!d.ok()) return d.status();
    ApplyLocked(d.value(), nullptr);
    TierSyncLocked();
  }
  Activity();
  return Status::Ok();
}

void CacheFront::ReadPolicy(const std::function<void(const cache::Policy&)>& fn) {
  std::lock_guard lock(policy_mu_);
  fn(*policy_);
}

void CacheFront::SetRequestBytes(uint64_t bytes, bool measure) {
  std::lock_guard lock(policy_mu_);
  request_bytes_.store(bytes, std::memory_order_relaxed);
  request_cost_ = measure ? std::make_unique<cache::RequestCost>() : nullptr;
}

void CacheFront::LoadedLocked(uint64_t bytes, uint64_t start_ns, uint64_t end_ns,
                              uint32_t others) {
  if (request_cost_ == nullptr || !request_cost_->OnLoad(bytes, start_ns, end_ns, others)) return;
  const uint64_t r = request_cost_->bytes();
  request_bytes_.store(r, std::memory_order_relaxed);
  policy_->SetRequestBytes(r);
  if (log::Enabled(log::Level::kDebug)) {
    log::Debug("cache.request_bytes measured: " + std::to_string(r));
  }
}

CacheCounters CacheFront::counters() const {
  auto ld = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return {ld(c_.hits),      ld(c_.misses),       ld(c_.coalesced),
          ld(c_.bytes_read_lower), ld(c_.evictions), ld(c_.admissions),
          ld(c_.refused),   ld(c_.lower_errors), ld(c_.invalidations),
          ld(c_.streamed_opens), ld(c_.streamed_bytes), ld(c_.prefetched),
          ld(c_.prefetch_bytes), ld(c_.prefetch_hits), ld(c_.prefetch_wasted),
          ld(c_.handovers), ld(c_.refills), ld(c_.refill_bytes), ld(c_.tier_hits),
          ld(c_.tier_skipped)};
}

}  // namespace epochfs::store
