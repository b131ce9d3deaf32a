// CacheFront (cache_front.h): one copy's part. An object served whole is
// handed over to the kernel's page cache (fuse.one_copy): the RAM store keeps
// a stub of it (its id, version, checksum and size, no bytes; of a large one
// a checksum per block too), and an open the kernel serves from its pages is
// a hit on the stub. Pages the kernel loses of a large one are read back a
// block at a time (RefillBlock), the rest of it staying the kernel's.
#include <sys/stat.h>

#include <algorithm>
#include <memory>

#include "epochfs/common/hash.h"
#include "epochfs/common/log.h"
#include "epochfs/store/cache_front.h"

namespace epochfs::store {

uint64_t CacheFront::GateNow() const { return gate_now_ ? gate_now_() : NowNs(); }

void CacheFront::LostByKernel(cache::ObjectId id, uint64_t bytes, bool pieces) {
  std::lock_guard lock(gate_mu_);
  if (pieces) {
    gate_.LostPieces(id, bytes, GateNow());
  } else {
    gate_.Lost(bytes, GateNow());
    gate_.Forget(id);  // the daemon's again: its losses as the kernel's are over
  }
}

bool CacheFront::HandsOver() const {
  std::lock_guard lock(gate_mu_);
  return gate_.Open(ram_.budget(), GateNow());
}

bool CacheFront::RefillsWhole(const ObjectRef& stub, bool new_loss, bool from_start) const {
  if (!stub || !stub->handed_over) return false;
  std::lock_guard lock(gate_mu_);
  return gate_.RefillsWhole(stub->id, stub->handed_size, new_loss, from_start, ram_.budget(),
                            GateNow());
}

bool CacheFront::HandOver(const ObjectRef& served, uint64_t block) {
  if (!served || served->handed_over || ram_.Find(served->id) != served) return false;
  {
    std::lock_guard lock(gate_mu_);
    if (!gate_.Open(ram_.budget(), GateNow())) return false;  // the daemon keeps its copy
  }
  auto stub = std::make_shared<Object>();
  stub->id = served->id;
  stub->version = served->version;
  stub->checksum = served->checksum;
  stub->handed_over = true;
  stub->handed_size = served->data.size();
  // Outside the lock: hashing 16 MiB takes about a millisecond.
  stub->block_sums = RefillSums(served->data.data(), served->data.size(), block);
  if (!stub->block_sums.empty()) stub->sum_block = block;
  std::lock_guard lock(policy_mu_);
  if (!ram_.Replace(served, std::move(stub))) return false;
  c_.handovers.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// The store changes only under policy_mu_: what it holds is looked at once,
// under the lock (a stub refilled, handed back or evicted between two looks
// is never taken for what it was).
ObjectRef CacheFront::HitHandedOver(const GetRequest& req) {
  ObjectRef stub;
  {
    std::lock_guard lock(policy_mu_);
    stub = ram_.Find(req.id);
    if (!stub || !stub->handed_over || stub->version != req.version) return nullptr;
    HitStubLocked(req, stub);
  }
  if (log::Enabled(log::Level::kDebug)) log::Debug("hit " + req.rel + " (handed over)");
  Activity();
  return stub;
}

void CacheFront::HitStubLocked(const GetRequest& req, const ObjectRef& stub) {
  cache::Access a{req.id, stub->handed_size, req.job, req.sample, NowNs(), req.file};
  a.wait_ns = req.asked_ns != 0 && a.now_ns > req.asked_ns ? a.now_ns - req.asked_ns : 0;
  c_.hits.fetch_add(1, std::memory_order_relaxed);
  ApplyLocked(policy_->OnHit(a), nullptr);
  TierLocked(req, a, stub, false);
}

// An open the kernel may serve from its pages: the stub while the kernel
// holds the file, or the refill's bytes while they are back in RAM (the
// READ that refilled them hands them back: KernelHandover::SentToKernel).
// Never a load while either is resident: the kernel holds the pages, and a
// copy loaded under them would not be sent again whole to be handed over.
ObjectRef CacheFront::HitHeld(const GetRequest& req) {
  ObjectRef held;
  {
    std::lock_guard lock(policy_mu_);
    held = ram_.Find(req.id);
    if (!held || held->version != req.version) return nullptr;
    if (held->handed_over) {
      HitStubLocked(req, held);
    } else {
      ServeHitLocked(req, held, cache::Access::Served::kAtOnce);
    }
  }
  if (log::Enabled(log::Level::kDebug)) {
    log::Debug("hit " + req.rel + (held->handed_over ? " (handed over)" : ""));
  }
  Activity();
  return held;
}

void CacheFront::RefillOfHitLocked(const GetRequest& req, uint64_t size) {
  // The open's hit (HitHandedOver) is one; never below 0 if a caller erred.
  uint64_t hits = c_.hits.load(std::memory_order_relaxed);
  while (hits != 0 &&
         !c_.hits.compare_exchange_weak(hits, hits - 1, std::memory_order_relaxed)) {
  }
  c_.refills.fetch_add(1, std::memory_order_relaxed);
  cache::Access a{req.id, size, req.job, req.sample, NowNs(), req.file};
  a.wait_ns = req.asked_ns != 0 && a.now_ns > req.asked_ns ? a.now_ns - req.asked_ns : 0;
  a.served = cache::Access::Served::kRefill;
  policy_->OnRefilled(a);
}

void CacheFront::RefillOfHit(const GetRequest& req, uint64_t size) {
  if (!req.first_refill) return;
  std::lock_guard lock(policy_mu_);
  RefillOfHitLocked(req, size);
}

// A refill (GetRequest::heard) that LOWER answered under another version than
// the one handed over (`req.version`): when its bytes are those handed over
// (their checksum and size), they are that version for the kernel's pages,
// and go back under it. LOWER gives unchanged bytes another version when an
// identical copy was renamed over the file, or its mode or times were set
// (version.h: its ctime moved).
// Otherwise `loaded` as it is. Copies the bytes: a rare path.
ObjectRef CacheFront::AsHandedOver(const GetRequest& req, ObjectRef loaded) const {
  const ObjectRef stub = ram_.Find(req.id);
  if (!stub || !stub->handed_over || stub->version != req.version ||
      stub->checksum != loaded->checksum || stub->handed_size != loaded->data.size()) {
    return loaded;
  }
  auto same = std::make_shared<Object>(*loaded);
  same->version = req.version;
  return same;
}

// Read through Lower as a block load is (Fetch), without the second tier
// (which holds whole objects) and outside the RAM tier and the policy.
// Compared by bytes, not by version: LOWER may number an unchanged file anew
// (AsHandedOver); the size and the block's checksum are those handed over.
Result<ObjectRef> CacheFront::RefillBlock(const GetRequest& req, const ObjectRef& stub,
                                          uint64_t index, bool first) {
  if (!stub || !stub->handed_over || stub->sum_block == 0 || index >= stub->block_sums.size()) {
    return InvalidArgument(req.rel + ": no block " + std::to_string(index) + " to refill");
  }
  const uint64_t off = index * stub->sum_block;
  const uint64_t len = std::min(stub->sum_block, stub->handed_size - off);
  const uint64_t start = NowNs();
  auto fail = [this, start](Status s) -> Result<ObjectRef> {
    c_.lower_errors.fetch_add(1, std::memory_order_relaxed);
    load_time_.Observe(NowNs() - start);
    return s;
  };
  auto opened = lower_.OpenAndRead(req.rel, 0, req.as);
  if (!opened.ok()) return fail(opened.status());
  const struct stat& st = opened.value().st;
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != stub->handed_size) {
    return Stale(req.rel + ": changed on LOWER since it was handed over (its size)");
  }
  auto data = lower_.ReadAt(opened.value().fd.get(), len, off);
  if (!data.ok()) return fail(data.status());
  c_.bytes_read_lower.fetch_add(data.value().size(), std::memory_order_relaxed);
  load_time_.Observe(NowNs() - start);
  if (data.value().size() != len ||
      Checksum(data.value().data(), data.value().size()) != stub->block_sums[index]) {
    return Stale(req.rel + ": block " + std::to_string(index) +
                 " changed on LOWER since it was handed over");
  }
  if (first) {
    std::lock_guard lock(policy_mu_);
    RefillOfHitLocked(req, stub->handed_size);
  }
  c_.refill_bytes.fetch_add(len, std::memory_order_relaxed);
  LostByKernel(stub->id, len, true);
  if (log::Enabled(log::Level::kDebug)) {
    log::Debug("refill " + req.rel + ": block " + std::to_string(index) + ", " +
               std::to_string(len) + " bytes from lower");
  }
  auto block = std::make_shared<Object>();
  block->id = stub->id;
  block->version = stub->version;
  block->data = std::move(data).value();
  block->checksum = ObjectChecksum(block->data.data(), block->data.size());
  return ObjectRef(std::move(block));
}

}  // namespace epochfs::store
