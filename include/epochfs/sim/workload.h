// Workload: the description `epochfs sim` replays (a TOML file, see
// docs/simulator.md and epochfs(8), section SIMULATOR).
//
//   seed = 1
//   budget = "40%"            # bytes ("2GiB") or % of the distinct data of all jobs
//   prefetch = 4              # the daemon's cache.prefetch (0 = off)
//   request_bytes = "auto"    # the daemon's cache.request_bytes (or bytes)
//   read_slots = 1            # the daemon's lower.read_slots
//   weigh_hits = false        # the daemon's cache.weigh_hits
//   [storage]                 # bandwidth (bytes/s, all channels together),
//   bandwidth = "8MiB"        # latency_ms, concurrency, iops (0 = unlimited)
//   [disk]                    # optional: a second tier (the daemon's disk tier):
//   size = "150%"             # bytes or % of the distinct data; bandwidth
//   bandwidth = "2GiB"        # (bytes/s, reads together), latency_ms per read
//   [[job]]                   # name, dataset, samples, size, batch_size, epochs,
//   name = "a"                # loaders, compute_ms, start_s, report_compute, ranks
//
// Plain data, validated once by ParseWorkload: every error names the key and
// the line ("job[2].size (line 14): ..."). Unknown keys are errors too.
// Thread safety: plain values; the parse functions are reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs::sim {

// Size of each sample of a dataset. Drawn once per sample (seeded), so a
// dataset has the same sizes in every epoch and for every job sharing it.
struct SizeSpec {
  enum class Dist : uint8_t { kFixed, kUniform, kLognormal };
  Dist dist = Dist::kFixed;
  uint64_t fixed = 0;         // kFixed: every sample, >= 1
  uint64_t min = 0, max = 0;  // kUniform: integers in [min, max], 1 <= min <= max
  uint64_t mean = 0;          // kLognormal: mean of the distribution, >= 1
  double sigma = 0.0;         // kLognormal: σ of the underlying normal, >= 0
  bool operator==(const SizeSpec&) const = default;
};

struct JobSpecW {
  std::string name;      // unique, non-empty
  std::string dataset;   // jobs with equal datasets read the same objects; default: name
  uint32_t samples = 0;  // N >= 1
  SizeSpec size;
  uint32_t batch_size = 0;  // b >= 1
  uint32_t epochs = 0;      // >= 1
  uint32_t loaders = 1;     // W >= 1 (DataLoader workers; prefetch depth W batches)
  double compute_ms = 0;    // per batch, >= 0
  double start_s = 0;       // >= 0
  // The job tells the policy its compute per batch (its config's compute_ms);
  // false: the epoch policy measures it during warm-up, as on a mount where the
  // job does not report it.
  bool report_compute = false;
  // A distributed run (DistributedSampler): ParseWorkload expands a [[job]]
  // with ranks = R > 1 into R jobs "NAME.rank0" .. "NAME.rank{R-1}", each with
  // `run` = NAME and its `rank`. Every epoch they split one shuffle of the
  // dataset: rank r reads positions r, r+R, r+2R, ... of it, padded as
  // DistributedSampler pads (to a multiple of R, with the shuffle's first
  // indices), so the ranks take equal steps; the engine runs their computes in
  // step, as DDP's all-reduce does.
  std::string run;     // the run's name; empty: not part of a distributed run
  uint32_t rank = 0;   // < ranks
  uint32_t ranks = 1;  // >= 1
};

struct StorageSpec {
  double bandwidth = 0;      // bytes per second, all channels together, > 0
  double latency_ms = 0;     // per request, >= 0
  uint32_t concurrency = 1;  // requests in flight, >= 1
  double iops = 0;           // request starts per second, 0 = unlimited
};

// The second tier on local SSD (the daemon's cache.disk_path): its size, and
// what a read from it costs (latency_ms, then its bytes at `bandwidth`, reads
// served in order on the disk's link). No [disk] table: RAM only.
struct DiskSpec {
  bool size_is_percent = false;
  double size_percent = 0;  // of the distinct bytes of all jobs' datasets
  uint64_t size_bytes = 0;  // 0 (and no percentage): no disk tier
  double bandwidth = 0;     // bytes per second, > 0 with a disk tier
  double latency_ms = 0;    // per read, >= 0
  bool enabled() const { return size_is_percent ? size_percent > 0 : size_bytes > 0; }
};

// Knobs of the epoch policy (EpochPolicyParams) a workload may set: table [epoch].
struct EpochKnobs {
  double gain_max = 2.0;
  uint32_t warmup_batches = 0;
  bool share_idle = true;
};

struct Workload {
  uint64_t seed = 1;
  bool budget_is_percent = false;
  double budget_percent = 0;  // of the distinct bytes of all jobs' datasets, (0, 100+]
  uint64_t budget_bytes = 0;
  // Storage requests the cache may have in flight loading what the jobs
  // declared they read next (the daemon's cache.prefetch; policies that give
  // no prefetch hints ignore it), 0..64.
  uint32_t prefetch = 4;
  // What one storage request costs beyond its bytes, in bytes (the daemon's
  // cache.request_bytes: the future policy's and Belady's weighing of sizes).
  uint64_t request_bytes = 0;
  // "auto" (the default, as the daemon's): measured from the simulated loads,
  // as the daemon measures its LOWER (cache::RequestCost), starting at 0.
  bool request_bytes_auto = true;
  // The daemon's lower.read_slots: a reader's request of the job first in
  // line (the policy's BytesLeft) starts at once, the others' wait until
  // fewer than this many are in flight. 0: no order, every request starts at
  // once. 0..1024.
  uint32_t read_slots = 1;
  // The daemon's cache.weigh_hits: the future policy weighs a hit by what it
  // saves the job reading it (its loaders' share of time waiting for storage).
  bool weigh_hits = false;
  StorageSpec storage;
  DiskSpec disk;
  EpochKnobs epoch;
  std::vector<JobSpecW> jobs;  // >= 1
};

// Parses and validates the TOML text. `origin` names the file in messages.
Result<Workload> ParseWorkload(std::string_view toml_text, const std::string& origin);
Result<Workload> LoadWorkloadFile(const std::string& path);

// Checks the cross-field rules (used by ParseWorkload; tests that build a
// Workload in code call it too): unique job names, jobs sharing a dataset
// agree on samples and size.
Status ValidateWorkload(const Workload& w);

}  // namespace epochfs::sim
