// One copy's gate: losses of handed-over pages weighed against the budget
// (handover_gate.h).
#include "epochfs/store/handover_gate.h"

#include <cmath>

namespace epochfs::store {

double HandoverGate::LostBytes(uint64_t now_ns) const {
  if (lost_ <= 0) return 0;
  const uint64_t age = now_ns > at_ns_ ? now_ns - at_ns_ : 0;  // never grows backwards
  return lost_ * std::exp2(-static_cast<double>(age) / static_cast<double>(kHalfLifeNs));
}

void HandoverGate::Lost(uint64_t bytes, uint64_t now_ns) {
  if (bytes == 0) return;
  lost_ = LostBytes(now_ns) + static_cast<double>(bytes);
  if (now_ns > at_ns_) at_ns_ = now_ns;
}

bool HandoverGate::Open(uint64_t budget, uint64_t now_ns) const {
  const double lost = LostBytes(now_ns);
  if (lost <= 0) return true;
  return lost < static_cast<double>(budget) / static_cast<double>(kShutFraction);
}

}  // namespace epochfs::store
