// CacheFront: serves dataset objects through the RAM tier.
//
// Get() returns the bytes of one lower file, or of one block of it (a file
// too large to cache whole): from the RAM store on a hit, else loaded from
// Lower. N concurrent Gets of one missing object, of one version, cause
// exactly one lower read (single flight); the others wait for it (a Get
// for another version waits too, then loads for itself). Prefetch() loads an
// object ahead of its read, as the policy's PrefetchHints() ask; a Get of an
// object being prefetched joins that load (it is never read twice), and is
// reported to the policy as its read once the bytes are in (a hit served by
// joining: counted in `coalesced`, not in `hits`). Every access is reported
// to the Policy and its Decision applied to the store (evictions first, then
// admission). A file larger than max_object_bytes() is asked for in blocks
// (GetRequest::length), each an object of its own (store::BlockIdOf).
//
// The RAM store and the policy agree: the store changes only under policy_mu_
// (every insert and erase follows a Decision or a drop the policy hears of),
// and a lookup made without that lock is checked again under it, so a racing
// eviction or load never leaves bytes in RAM that the policy has forgotten.
//
// A second tier (the disk tier, SetSecondTier): a RAM miss asks it before
// LOWER (bytes it verified, of the reader's version); an object loaded from
// LOWER is written to it when the placement (cache/tier_placement.h: the
// policy's own, else least recently read) places it there. The placement
// hears of every read under policy_mu_, as the policy does
// (cache_front_tier.cc).
//
// Thread safety: thread-safe. Lock order: flights_mu_ is never held while
// taking policy_mu_; either may be held while taking a RamStore shard lock,
// the second tier's own lock or gate_mu_ (one copy's HandoverGate, a leaf).
// Errors: those of Lower (NotFound, PermissionDenied, IoError).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "epochfs/cache/policy.h"
#include "epochfs/cache/request_cost.h"
#include "epochfs/cache/tier_placement.h"
#include "epochfs/common/access_rule.h"
#include "epochfs/common/histogram.h"
#include "epochfs/store/handover_gate.h"
#include "epochfs/store/lower.h"
#include "epochfs/store/object.h"
#include "epochfs/store/ram_store.h"
#include "epochfs/store/read_slots.h"
#include "epochfs/store/second_tier.h"

namespace epochfs::store {

struct GetRequest {
  cache::ObjectId id = 0;
  std::string rel;           // lower path of the object
  Version version;           // the version the caller expects (from its stat)
  cache::JobId job = cache::kNoJob;
  int64_t sample = -1;
  // A block: bytes [offset, offset + length) of the file (the last block
  // ends at the file's end). 0: the whole file.
  uint64_t offset = 0;
  uint64_t length = 0;
  // A block's file (its id as a whole object): the policy gives the block the
  // file's declared future (cache::Access::file). 0 for a whole file.
  cache::ObjectId file = 0;
  // When the reader asked (Get sets it): the policy hears how long it waited
  // (cache::Access::wait_ns).
  uint64_t asked_ns = 0;
  // The policy has heard of this read already (HitHandedOver, at the open):
  // Get serves the bytes (refilling a handed-over stub in its place) but
  // counts no access and admits nothing.
  bool heard = false;
  // heard: this is the open's first READ that needs the bytes again (the
  // caller's part: at most one Get per open sets it). When Get does not
  // find them in RAM (it loads them, from LOWER or the second tier, or joins
  // a load), the open's hit becomes a refill (CacheCounters::refills).
  bool first_refill = false;
  // An open (not heard) of an inode the kernel was sent this version whole,
  // whose pages it may keep (one copy, a mount that answers OPEN): a
  // handed-over stub of req.version is a hit on the stub (HitHandedOver),
  // returned with no bytes, never read again from LOWER here; resident
  // bytes of it are a hit as usual. Decided in one look under the policy's
  // lock: an open that looked for a stub, found a refill landed (not yet
  // handed back), then loaded because the stub was back by its Get, kept a
  // second copy that no READ ever handed over (the kernel held the pages).
  // Only when nothing of req.version is resident is it loaded (or when it
  // was handed back between each of a few more looks: a cost, rare).
  bool kernel_holds = false;
  // A prefetch on a user's behalf (a job's owner): only a file they may read
  // is loaded; another fails as a missing file does (MissingOnLower), with
  // nothing read. Null: anything (root's jobs).
  std::shared_ptr<const Credentials> as = nullptr;
};

struct CacheCounters {
  // Every read counts once, by how it was served: hits + misses +
  // coalesced + refills (a read whose open the policy heard of already,
  // GetRequest::heard, is counted at the open). The hit ratio is hits over
  // that sum: a read that waited for LOWER is not a hit.
  uint64_t hits = 0;              // served from RAM at once
  uint64_t misses = 0;            // loaded from lower (or, rarely, served from bytes in hand
                                  // that the store had dropped meanwhile); a load that found
                                  // another version than the reader's is no read (Get)
  uint64_t coalesced = 0;         // joined a load in flight (another reader's or a prefetch's)
                                  // and waited for it: not a hit
  uint64_t bytes_read_lower = 0;  // bytes read from lower (loads and streams)
  uint64_t evictions = 0;
  uint64_t admissions = 0;
  uint64_t refused = 0;           // admissions the store refused (no room)
  uint64_t lower_errors = 0;
  uint64_t invalidations = 0;     // objects dropped because the lower file changed
  uint64_t streamed_opens = 0;    // opens of files too large to cache (max_object_bytes())
  uint64_t streamed_bytes = 0;    // bytes read from lower for them, uncached
  uint64_t prefetched = 0;        // objects loaded ahead of their read and admitted
  uint64_t prefetch_bytes = 0;    // bytes read from lower by prefetch (in bytes_read_lower)
  uint64_t prefetch_hits = 0;     // first reads of a prefetched object (resident or joined)
  uint64_t prefetch_wasted = 0;   // prefetched objects evicted or dropped unread
  uint64_t handovers = 0;         // objects handed over to the kernel's page cache (HandOver)
  uint64_t refills = 0;           // handed-over objects read again from lower: not hits
                                  // (the policy hears a hit served kRefill), whole or only
                                  // the blocks the kernel lost (RefillBlock). An open that
                                  // counted a hit (HitHandedOver) and whose READs then
                                  // needed a refill is moved from hits to refills, once
                                  // (GetRequest::first_refill; the policy hears OnRefilled)
  uint64_t refill_bytes = 0;      // bytes read from lower by refills (in bytes_read_lower)
  // The second tier (SetSecondTier): misses it served (bytes not read from
  // LOWER), and objects loaded from LOWER the placement did not write to it
  // (their next read lies beyond what it holds).
  uint64_t tier_hits = 0;
  uint64_t tier_skipped = 0;
};

class CacheFront {
 public:
  CacheFront(const Lower& lower, std::unique_ptr<cache::Policy> policy, uint64_t budget);
  CacheFront(const CacheFront&) = delete;
  CacheFront& operator=(const CacheFront&) = delete;

  // The object's bytes. REQUIRES: the object is a regular file no larger than
  // max_object_bytes(), or a block of one (req.length > 0). A resident object
  // whose version differs from req.version is dropped and reloaded. A whole
  // file found on LOWER at another version than req.version is returned
  // uncached, counted in no counter and not told to the policy: the caller
  // refuses it (ESTALE) and the read that follows is the one counted. A block is
  // only ever of req.version: Stale when the file on LOWER is another version
  // now (its blocks are never mixed), or shorter than the block's end.
  Result<ObjectRef> Get(const GetRequest& req);
  // Loads `req.id` ahead of any read (req.version is ignored: the object
  // takes the version it has on LOWER) and reports it with
  // Policy::OnPrefetched. True when admitted; false when refused, already
  // resident or already in flight (nothing read then). Errors: NotFound (no
  // regular file at req.rel), InvalidArgument (larger than
  // max_object_bytes()), and LOWER's. A file `req.as` may not read is
  // NotFound, as a missing one. *loaded_bytes, if given, is set to the
  // bytes read (0 when nothing was).
  Result<bool> Prefetch(const GetRequest& req, uint64_t* loaded_bytes = nullptr);
  // Told, for each prefetch, the attributes of the file it opened (fstat:
  // a regular file `req.as` may read), so that the reader's lookup need not
  // ask LOWER (KnownLower::Learn). Called outside every lock of the
  // CacheFront. REQUIRES: set before the first Prefetch.
  using AttrListener = std::function<void(const std::string& rel, const struct stat& st)>;
  void SetPrefetchAttrListener(AttrListener fn) { on_prefetch_attr_ = std::move(fn); }
  // One copy (fuse.one_copy): the kernel's page cache now holds every byte of
  // `served`, the resident object, and keeps it until the object is evicted
  // (the DropListener then drops its pages) or the kernel reclaims them. The
  // store drops its own bytes and keeps a handed-over stub (Object::
  // handed_over) charging the same bytes, so the policy's accounting does
  // not move. A later Get of it (the kernel lost pages) reads it again from
  // lower, checks it against the checksum handed over, and puts the bytes
  // back (a hit for the policy, counted in `refills`); bytes that differ are
  // an invalidation (the stub dropped, then a miss). Returns false and
  // changes nothing when `served` is no longer the resident object.
  // `block` > 0 and `served` larger than it: the stub keeps a checksum of
  // each `block` bytes (Object::block_sums), and a refill may read back
  // only the blocks the kernel lost (RefillBlock).
  // While the kernel keeps losing what it is handed (the refills' bytes,
  // HandoverGate), nothing is handed over: returns false and the daemon
  // keeps its copy.
  bool HandOver(const ObjectRef& served, uint64_t block = 0);
  // Whether HandOver hands objects over now (its gate is open).
  bool HandsOver() const;
  // Whether pages the kernel lost of handed-over `stub`, which keeps a
  // checksum per piece (RefillBlock), are read back whole now (a Get: the
  // daemon keeps that copy) rather than in the pieces lost: while the gate
  // is shut, for a file lost from its start or one that keeps losing pages
  // (HandoverGate::RefillsWhole). `new_loss`: nothing of this loss was read
  // back yet (the open's first refill); `from_start`: the read asks from the
  // file's first byte.
  bool RefillsWhole(const ObjectRef& stub, bool new_loss, bool from_start) const;
  // The clock the gate's losses decay by (steady nanoseconds; NowNs by
  // default), so that a test can say how much time passes. REQUIRES: called
  // before the first Get.
  using Clock = std::function<uint64_t()>;
  void SetGateClock(Clock now) { gate_now_ = std::move(now); }
  // Block `index` of handed-over `stub` (Object::block_sums), read again
  // from LOWER at req.rel for pages of it the kernel lost, checked against
  // the checksum handed over, and returned as an object of its own (id and
  // version the stub's, `data` the block's bytes) that the RAM tier does not
  // hold: the kernel keeps them, the stub stays. The policy hears nothing
  // (the open was its access: HitHandedOver); counted in bytes_read_lower
  // and refill_bytes; when `first` (the first block the open refills), the
  // open's hit becomes a refill (as GetRequest::first_refill). Stale when LOWER's file is of another size now, or the block's
  // bytes are not those handed over; InvalidArgument when the stub keeps no
  // sums or `index` is past them; LOWER's errors.
  Result<ObjectRef> RefillBlock(const GetRequest& req, const ObjectRef& stub, uint64_t index,
                                bool first);
  // An open that the kernel will serve from its own pages (a mount that
  // answers OPEN, one copy): when the resident object of req.id is a
  // handed-over stub of req.version, the read is a hit for the policy, told
  // now, and the stub is returned (no bytes: a READ that still reaches the
  // daemon asks Get, which refills it). nullptr, and nothing counted,
  // otherwise. An open asks Get with GetRequest::kernel_holds instead, which
  // also serves resident bytes in the same look.
  ObjectRef HitHandedOver(const GetRequest& req);
  // What the policy would prefetch now (Prefetching::PrefetchHints), skipping the
  // objects in flight and those `skip` names; `loading` are the caller's
  // prefetches in flight.
  std::vector<cache::PrefetchHint> PrefetchHints(size_t max,
                                                 const std::function<bool(cache::ObjectId)>& skip,
                                                 const std::vector<cache::PrefetchHint>& loading);
  // Whose attributes the policy would fetch ahead now (Prefetching::StatHints),
  // skipping as PrefetchHints does.
  std::vector<cache::PrefetchHint> StatHints(size_t max,
                                             const std::function<bool(cache::ObjectId)>& skip,
                                             const std::vector<cache::PrefetchHint>& loading);
  // The prefetch threads stop: LOWER's gate lets go of the prefetch loads it
  // runs on them (LowerGate::ReleasePrefetch; no Prefetch loads from LOWER
  // after this). Returns how many threads will not return from their load.
  uint32_t ReleasePrefetch() { return lower_.ReleasePrefetch(); }
  // Orders the readers' loads from LOWER (ReadSlots; the default: no bound):
  // each waits for its turn by the policy's BytesLeft of its job. An
  // interrupted wait is Interrupted, for that read only. REQUIRES: called
  // before the first Get.
  void SetReadSlots(const ReadSlotsOptions& options) {
    read_slots_ = std::make_unique<ReadSlots>(options);
  }
  ReadSlotsCounters read_slots_counters() const { return read_slots_->counters(); }
  // What the policy was given as a LOWER request's cost beyond its bytes
  // (cache.request_bytes). `measure` ("auto"): from now on it is measured
  // from the loads (cache::RequestCost: each load's bytes, start and end, its
  // wait for a read slot excluded), and each new estimate is given to the
  // policy (Policy::SetRequestBytes). REQUIRES: called before the first Get.
  void SetRequestBytes(uint64_t bytes, bool measure);
  // The policy's cost per request now (stats: request_bytes).
  uint64_t request_bytes() const { return request_bytes_.load(std::memory_order_relaxed); }
  // Demand loads (a reader's misses) in flight now, or waiting for a slot.
  uint64_t demand_loads() const { return demand_loads_.load(std::memory_order_relaxed); }
  // Called after every read the policy hears of, and every declaration
  // (WithPolicy), outside the policy lock: the prefetcher's wake-up. REQUIRES:
  // set before the first Get.
  void SetActivityListener(std::function<void()> fn) { on_activity_ = std::move(fn); }
  // Drops `id` from the RAM tier (the lower file changed).
  void Invalidate(cache::ObjectId id);
  // Counts an open of a file too large to cache, which the caller streams
  // from lower itself, and the bytes (or the error) of each such read.
  void CountStreamedOpen();
  void CountStreamed(uint64_t bytes, bool error);

  // Changes the budget (memory governor, cache.memory = "auto"): the policy
  // chooses the evictions (Policy::SetBudget), the RAM store takes the new
  // budget, the evicted objects leave it (and the DropListener hears of each).
  // Returns the number of objects evicted, or the policy's error (Unsupported:
  // nothing changed).
  Result<uint64_t> SetBudget(uint64_t bytes);

  // Largest object that is cached whole: a quarter of the budget, at most
  // 1 GiB. Follows SetBudget (a file larger than what the budget can hold is
  // streamed rather than loaded whole under memory pressure); each open
  // decides once.
  uint64_t max_object_bytes() const { return max_object_.load(std::memory_order_relaxed); }
  const RamStore& ram() const { return ram_; }
  CacheCounters counters() const;
  // How long each load from LOWER took (demand and prefetch: open, stat and
  // read, failed ones too; its wait for a read slot excluded).
  Histogram::Reading load_time() const { return load_time_.Read(); }
  // How long each Get waited for its bytes, from the call to its return: a
  // hit's lookup, or a load (its own, another reader's, a prefetch's) with
  // its wait for a read slot; failed Gets too.
  Histogram::Reading read_wait() const { return read_wait_.Read(); }

  // The tier below RAM (second_tier.h), placed by the policy's
  // tier_placement(), else least recently read (cache::MakeLruTier). Objects
  // the tier holds already (a warm start) are handed to the placement now.
  // REQUIRES: called before the first Get; `tier` outlives the front.
  void SetSecondTier(SecondTier* tier);
  const SecondTier* second_tier() const { return tier_; }
  // The bytes of `key` (its version) from whichever tier holds them, RAM or
  // the second tier, without LOWER and without telling the policy: what a
  // peer node would be served. nullptr when neither holds them.
  ObjectRef Lookup(const LowerKey& key);

  // Called (under the policy lock: keep it short, never call back into the
  // CacheFront) for every object that leaves the RAM tier. REQUIRES: set
  // before the first Get.
  using DropListener = std::function<void(cache::ObjectId)>;
  void SetDropListener(DropListener fn) { on_drop_ = std::move(fn); }

  // Runs `fn` with the policy under its lock; applies the Decision it returns
  // when OK, and returns its status.
  Status WithPolicy(const std::function<Result<cache::Decision>(cache::Policy&)>& fn);
  // Runs `fn` with the policy under its lock, read-only.
  void ReadPolicy(const std::function<void(const cache::Policy&)>& fn);
  std::string policy_name() const { return policy_->name(); }

 private:
  // PrefetchHints (`stats` false) or StatHints (true).
  std::vector<cache::PrefetchHint> Hints(bool stats, size_t max,
                                         const std::function<bool(cache::ObjectId)>& skip,
                                         const std::vector<cache::PrefetchHint>& loading);
  // A resident object of the requested version, found without policy_mu_.
  // Counts a hit and reports the read to the policy.
  // `served`: kJoined for a read that joined a prefetch's load (counted in
  // coalesced, not hits).
  Result<ObjectRef> ServeHit(const GetRequest& req, ObjectRef hit,
                             cache::Access::Served served = cache::Access::Served::kAtOnce);
  // REQUIRES: policy_mu_ held. ServeHit's count and report of `hit`.
  void ServeHitLocked(const GetRequest& req, const ObjectRef& hit, cache::Access::Served served);
  // REQUIRES: policy_mu_ held; `stub`, the resident object, is a handed-over
  // stub of req.version. HitHandedOver's count and report.
  void HitStubLocked(const GetRequest& req, const ObjectRef& stub);
  // GetRequest::kernel_holds: the resident object of req.version (a stub or
  // bytes), counted as a hit, in one look under policy_mu_; nullptr, nothing
  // counted, when none is resident (cache_front_handover.cc).
  ObjectRef HitHeld(const GetRequest& req);
  // Get; a reader that joined a load whose answer is not its own (a failed
  // prefetch, a load for or of another version) loads for itself, at most
  // `retries` more times.
  Result<ObjectRef> GetOnce(const GetRequest& req, int retries);
  // Reads the object from LOWER; a demand load reports it with OnMiss, a
  // prefetch with OnPrefetched (*admitted says whether it stayed).
  Result<ObjectRef> Load(const GetRequest& req, bool prefetch, bool* admitted = nullptr);
  // A refill's bytes read under another version: under the version handed
  // over when they are its bytes (cache_front_handover.cc).
  ObjectRef AsHandedOver(const GetRequest& req, ObjectRef loaded) const;
  // REQUIRES: policy_mu_ held. The hit HitHandedOver counted for req's open
  // was a refill (its READ read `size` bytes' object again, after waiting
  // since req.asked_ns): moved from hits to refills, and the policy told
  // (OnRefilled). Once per open: the caller's part (first_refill, `first`).
  void RefillOfHitLocked(const GetRequest& req, uint64_t size);
  // RefillOfHitLocked under the lock, when req.first_refill.
  void RefillOfHit(const GetRequest& req, uint64_t size);
  // The object's bytes for Load: from the second tier when it holds the
  // version, else from LOWER (*from_tier says which). Counts LOWER's errors.
  Result<ObjectRef> Fetch(const GetRequest& req, bool prefetch, bool* from_tier);
  // The second tier's copy of req's object at version `v`, or nullptr.
  ObjectRef TierRead(const GetRequest& req, const Version& v);
  // REQUIRES: policy_mu_ held; the policy heard of `a` already. The
  // placement hears of it: read (a RAM hit, or bytes from the tier) or
  // loaded from LOWER (then `ref` may be written to the tier).
  void TierLocked(const GetRequest& req, const cache::Access& a, const ObjectRef& ref,
                  bool loaded);
  // REQUIRES: policy_mu_ held. The tier's news and the placement's own
  // evictions, applied.
  void TierSyncLocked();
  void TierApplyLocked(const cache::TierDecision& d);
  // A reader's Load, once it holds a read slot (SetReadSlots).
  Result<ObjectRef> LoadInSlot(const GetRequest& req);
  // REQUIRES: policy_mu_ held. cache::ApplyDecision on the RAM store.
  void ApplyLocked(const cache::Decision& d, const ObjectRef& loaded);
  class RamTarget;
  // REQUIRES: policy_mu_ held. `id` left the RAM tier.
  void LeftLocked(cache::ObjectId id);
  // REQUIRES: policy_mu_ held. A load of `bytes` from LOWER, start to end,
  // begun while `others` were under way (SetRequestBytes with measure).
  void LoadedLocked(uint64_t bytes, uint64_t start_ns, uint64_t end_ns, uint32_t others);
  void Activity() const {
    if (on_activity_) on_activity_();
  }

  const Lower& lower_;
  RamStore ram_;
  std::atomic<uint64_t> max_object_;

  std::mutex policy_mu_;
  std::unique_ptr<cache::Policy> policy_;  // guarded by policy_mu_
  std::unique_ptr<cache::RequestCost> request_cost_;  // guarded by policy_mu_; null: fixed
  std::atomic<uint64_t> request_bytes_{0};
  std::atomic<uint64_t> at_lower_{0};  // Loads under way (Load)

  SecondTier* tier_ = nullptr;
  cache::TierPlacement* placement_ = nullptr;  // guarded by policy_mu_
  std::unique_ptr<cache::TierPlacement> own_placement_;

  DropListener on_drop_;
  std::function<void()> on_activity_;
  AttrListener on_prefetch_attr_;
  // Prefetched objects not read yet (guarded by policy_mu_).
  std::unordered_set<cache::ObjectId> unread_prefetched_;

  struct Flight {
    std::shared_future<Result<ObjectRef>> done;
    bool prefetch = false;
    Version version;  // a reader's load: the version it asked for
  };
  std::mutex flights_mu_;
  std::unordered_map<cache::ObjectId, Flight> flights_;
  std::atomic<uint64_t> demand_loads_{0};
  std::unique_ptr<ReadSlots> read_slots_ = std::make_unique<ReadSlots>(ReadSlotsOptions{});

  Histogram load_time_;
  Histogram read_wait_;

  // One copy: whether HandOver hands over now (the refills feed it): `bytes`
  // of object `id` read back whole (it is the daemon's again) or in pieces.
  void LostByKernel(cache::ObjectId id, uint64_t bytes, bool pieces);
  mutable std::mutex gate_mu_;
  HandoverGate gate_;  // guarded by gate_mu_ (a leaf lock)
  Clock gate_now_;     // the gate's clock; NowNs when empty
  uint64_t GateNow() const;

  struct AtomicCounters {
    std::atomic<uint64_t> hits{0}, misses{0}, coalesced{0}, bytes_read_lower{0}, evictions{0},
        admissions{0}, refused{0}, lower_errors{0}, invalidations{0}, streamed_opens{0},
        streamed_bytes{0}, prefetched{0}, prefetch_bytes{0}, prefetch_hits{0}, prefetch_wasted{0},
        handovers{0}, refills{0}, refill_bytes{0}, tier_hits{0}, tier_skipped{0};
  } c_;
};

uint64_t NowNs();

}  // namespace epochfs::store
