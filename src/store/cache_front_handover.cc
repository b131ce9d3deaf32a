// CacheFront (cache_front.h): one copy's part. An object served whole is
// handed over to the kernel's page cache (fuse.one_copy): the RAM store keeps
// a stub of it (its id, version, checksum and size, no bytes), and an open
// the kernel serves from its pages is a hit on the stub.
#include <memory>

#include "epochfs/common/log.h"
#include "epochfs/store/cache_front.h"

namespace epochfs::store {

bool CacheFront::HandOver(const ObjectRef& served) {
  if (!served || served->handed_over) return false;
  auto stub = std::make_shared<Object>();
  stub->id = served->id;
  stub->version = served->version;
  stub->checksum = served->checksum;
  stub->handed_over = true;
  stub->handed_size = served->data.size();
  std::lock_guard lock(policy_mu_);
  if (!ram_.Replace(served, std::move(stub))) return false;
  c_.handovers.fetch_add(1, std::memory_order_relaxed);
  return true;
}

ObjectRef CacheFront::HitHandedOver(const GetRequest& req) {
  ObjectRef stub = ram_.Find(req.id);
  if (!stub || !stub->handed_over || stub->version != req.version) return nullptr;
  {
    std::lock_guard lock(policy_mu_);
    // The store changes only under policy_mu_: refilled or evicted since the
    // Find, the caller's Get serves it as whatever it is now.
    if (ram_.Find(req.id) != stub) return nullptr;
    if (log::Enabled(log::Level::kDebug)) log::Debug("hit " + req.rel + " (handed over)");
    cache::Access a{req.id, stub->handed_size, req.job, req.sample, NowNs(), req.file};
    a.wait_ns = req.asked_ns != 0 && a.now_ns > req.asked_ns ? a.now_ns - req.asked_ns : 0;
    c_.hits.fetch_add(1, std::memory_order_relaxed);
    ApplyLocked(policy_->OnHit(a), nullptr);
    TierLocked(req, a, stub, false);
  }
  Activity();
  return stub;
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

}  // namespace epochfs::store
