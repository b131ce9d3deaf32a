// SampleIndex: object → sample of one job's samples list, for the job
// registry's attribution of reads (job_registry.h). Owns its copy of the
// pairs; immutable once built, so any thread may read it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "epochfs/cache/policy.h"

namespace epochfs::control {

// Object → sample index of one job's list: (object, sample) pairs sorted, so
// a list of millions is one allocation and one sort (built without the
// registry mutex). An object listed twice (two paths, one id) is its first
// sample.
class SampleIndex {
 public:
  SampleIndex() = default;
  explicit SampleIndex(const std::vector<cache::SampleRef>& refs) : sorted_(refs.size()) {
    for (size_t k = 0; k < refs.size(); ++k) sorted_[k] = {refs[k].object, static_cast<uint32_t>(k)};
    std::sort(sorted_.begin(), sorted_.end());
  }
  std::optional<uint32_t> Find(cache::ObjectId object) const {
    auto it = std::lower_bound(sorted_.begin(), sorted_.end(),
                               std::pair<cache::ObjectId, uint32_t>{object, 0});
    if (it == sorted_.end() || it->first != object) return std::nullopt;
    return it->second;
  }

 private:
  std::vector<std::pair<cache::ObjectId, uint32_t>> sorted_;
};

}  // namespace epochfs::control
