// Trace: what a Workload expands to, deterministically for its seed.
//
//   - each dataset's objects: ids and sizes (drawn once per sample; jobs that
//     share a dataset share them);
//   - each job's order for each epoch: a seeded Fisher-Yates shuffle of all its
//     samples (its own seed per job and epoch), generated on demand so that a
//     1.28M-sample, 10-epoch job never holds more than the orders in use; the
//     ranks of a distributed run share one shuffle and each takes its shard
//     (every ranks-th position from its rank on, padded as DistributedSampler);
//   - the budget in bytes ("40%" resolved against the distinct bytes), and
//     the disk tier's likewise.
//
// Random numbers come from splitmix64 and our own bounded draws and normal
// deviates, so the trace is the same on every platform for a seed.
// Thread safety: immutable after Make; const methods may run concurrently.
#pragma once

#include <cstdint>
#include <vector>

#include "epochfs/cache/policy.h"
#include "epochfs/common/status.h"
#include "epochfs/sim/workload.h"

namespace epochfs::sim {

// splitmix64: the simulator's only source of randomness.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next();
  // Uniform in [0, n), n >= 1 (Lemire's multiply-shift with rejection).
  uint64_t Below(uint64_t n);
  double Unit();    // uniform in [0, 1)
  double Normal();  // standard normal (Box-Muller)

 private:
  uint64_t s_;
};

// Mixes values into one seed (splitmix64 finaliser chain).
uint64_t MixSeed(uint64_t a, uint64_t b, uint64_t c = 0);

struct Dataset {
  std::string name;
  uint64_t id_base = 0;         // object of sample k: id_base + k (never 0)
  std::vector<uint64_t> sizes;  // bytes of sample k
  uint64_t total_bytes = 0;
};

class Trace {
 public:
  static Result<Trace> Make(const Workload& w);

  const Workload& workload() const { return w_; }
  const std::vector<Dataset>& datasets() const { return datasets_; }
  // Dataset of job j (index into datasets()).
  size_t dataset_of(size_t job) const { return job_dataset_[job]; }
  cache::ObjectId object(size_t job, uint32_t sample) const {
    return datasets_[job_dataset_[job]].id_base + sample;
  }
  uint64_t size(size_t job, uint32_t sample) const {
    return datasets_[job_dataset_[job]].sizes[sample];
  }
  // Epoch `epoch`'s order of job j: a permutation of 0..samples-1, or of its
  // rank's shard of one (no index twice, none out of range).
  std::vector<uint32_t> Order(size_t job, uint32_t epoch) const;
  uint64_t distinct_bytes() const { return distinct_bytes_; }
  uint64_t budget() const { return budget_; }
  // The disk tier's bytes (Workload::disk resolved); 0: no disk tier.
  uint64_t disk_budget() const { return disk_budget_; }

 private:
  Workload w_;
  std::vector<Dataset> datasets_;
  std::vector<size_t> job_dataset_;
  uint64_t distinct_bytes_ = 0;
  uint64_t budget_ = 0;
  uint64_t disk_budget_ = 0;
};

}  // namespace epochfs::sim
