// ApplyDecision: the one way a policy's Decision reaches a store.
//
// The daemon's cache front (its RAM store), the simulator engine and the
// replay (their model stores) each wrap their store in a DecisionTarget and
// call ApplyDecision, so that the rule below is written once:
//   1. every object in `evict`, in order, leaves the store (if it holds it);
//   2. then, when the Decision admits and the event brought a loaded object,
//      that object enters the store; when the store refuses it (no room), the
//      policy forgets it (Policy::OnDropped), so that the two agree again.
// Counting (evictions, admissions, refusals) is left to the caller, from the
// Applied it gets back.
//
// Pure: no I/O and no locks of its own. The caller holds whatever lock makes
// the store and the policy change together (the cache front: policy_mu_).
// Thread safety: as the target and the policy it is given.
#pragma once

#include <cstdint>
#include <optional>

#include "epochfs/cache/policy.h"

namespace epochfs::cache {

// What a Decision is applied to: one store, seen by object id.
class DecisionTarget {
 public:
  virtual ~DecisionTarget() = default;
  // `id` leaves the store. True when the store held it (an eviction); false
  // when it did not (already gone): nothing happens then.
  virtual bool Evict(ObjectId id) = 0;
  enum class Admission : uint8_t {
    kAdmitted,  // now in the store
    kRefused,   // the store has no room (or refuses it): the policy must forget it
    kPresent,   // the store holds it already: nothing changes, nothing to tell
  };
  // The event's loaded object `id` enters the store.
  virtual Admission Admit(ObjectId id) = 0;
};

struct Applied {
  uint64_t evicted = 0;   // objects Evict removed
  bool admitted = false;  // the loaded object entered the store
  bool refused = false;   // the store refused it (the policy was told OnDropped)
};

// Applies `d` to `store`: evictions, then the admission of `loaded` (nullopt:
// the event loaded nothing, as a hit or a declaration; `admit` is then moot).
Applied ApplyDecision(const Decision& d, std::optional<ObjectId> loaded, Policy& policy,
                      DecisionTarget& store);

}  // namespace epochfs::cache
