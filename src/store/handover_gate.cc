// One copy's gate: losses of handed-over pages weighed against the budget
// (handover_gate.h).
#include "epochfs/store/handover_gate.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace epochfs::store {

double HandoverGate::Decayed::At(uint64_t now_ns) const {
  if (bytes <= 0) return 0;
  const uint64_t age = now_ns > at_ns ? now_ns - at_ns : 0;  // never grows backwards
  return bytes * std::exp2(-static_cast<double>(age) / static_cast<double>(kHalfLifeNs));
}

void HandoverGate::Decayed::Add(uint64_t n, uint64_t now_ns) {
  bytes = At(now_ns) + static_cast<double>(n);
  if (now_ns > at_ns) at_ns = now_ns;
}

double HandoverGate::LostBytes(uint64_t now_ns) const { return lost_.At(now_ns); }

void HandoverGate::Lost(uint64_t bytes, uint64_t now_ns) {
  if (bytes == 0) return;
  lost_.Add(bytes, now_ns);
}

void HandoverGate::LostPieces(uint64_t id, uint64_t bytes, uint64_t now_ns) {
  if (bytes == 0) return;
  lost_.Add(bytes, now_ns);
  if (files_.size() >= kMaxFiles && !files_.contains(id)) {
    // Forget the half lost longest ago (their losses have decayed the most).
    std::vector<uint64_t> at;
    at.reserve(files_.size());
    for (const auto& [f, d] : files_) at.push_back(d.at_ns);
    std::nth_element(at.begin(), at.begin() + at.size() / 2, at.end());
    const uint64_t cut = at[at.size() / 2];
    std::erase_if(files_, [cut](const auto& e) { return e.second.at_ns <= cut; });
  }
  files_[id].Add(bytes, now_ns);
}

double HandoverGate::FileLostBytes(uint64_t id, uint64_t now_ns) const {
  auto it = files_.find(id);
  return it == files_.end() ? 0 : it->second.At(now_ns);
}

bool HandoverGate::RefillsWhole(uint64_t id, uint64_t size, bool new_loss, bool from_start,
                                uint64_t budget, uint64_t now_ns) const {
  if (Open(budget, now_ns)) return false;  // pieces: the kernel keeps the rest
  if (new_loss && from_start) return true;  // lost from its start: all of it, likely
  const double lost = FileLostBytes(id, now_ns);
  if (lost <= 0) return false;  // its first loss, of a few pages: pieces
  const double s = static_cast<double>(size);
  return new_loss ? lost >= s / static_cast<double>(kAgainFraction) : lost > s;
}

void HandoverGate::Forget(uint64_t id) { files_.erase(id); }

bool HandoverGate::Open(uint64_t budget, uint64_t now_ns) const {
  const double lost = LostBytes(now_ns);
  if (lost <= 0) return true;
  return lost < static_cast<double>(budget) / static_cast<double>(kShutFraction);
}

}  // namespace epochfs::store
