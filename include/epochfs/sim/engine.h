// Engine: the discrete-event model that replays a Trace through one policy.
//
// Model (docs/simulator.md states it with its assumptions):
//   - Each job has `loaders` workers. Worker w loads batches w, w+W, w+2W, ...
//     of the current epoch, its samples one after the other. Batch k may start
//     loading once batch k−W has gone to compute (prefetch depth W batches).
//   - An access is a hit when the object is in the store (cost 0), joins the
//     load in flight when another reader is loading it (single flight, as the
//     daemon's CacheFront: counted as a miss and as coalesced, no policy call),
//     else a miss: a storage request that waits for one of `concurrency`
//     channels (and the iops limit), takes `latency`, then moves its bytes over
//     the shared link at `bandwidth` (transfers are serialised on the link), and
//     holds its channel until done. Objects larger than min(budget/4, 1 GiB)
//     are streamed: a miss, never shown to the policy (as the daemon does).
//   - A batch's compute starts when all its samples are loaded and the
//     previous batch's compute ended; stall = time compute waits for data,
//     from the epoch's start for its first batch.
//   - The disk tier (Workload::disk; DiskModel, disk_model.h): a miss of an
//     object the disk holds is read from it (its latency and bandwidth; no
//     store channel, no read slot, not in bytes_read), the policy hears a
//     miss (OnMiss, as the daemon's), the placement a read; a load from the
//     store is offered to the placement (written or not). Prefetch moves held
//     objects up from the disk the same way.
//   - Epoch K+1 starts when epoch K's last compute ends (a DataLoader iterator
//     per epoch); the job ends after its last epoch's last compute.
//   - Prefetch (Workload::prefetch, the daemon's cache.prefetch): after every
//     event, while the storage requests in flight (readers' and prefetches')
//     are fewer than min(prefetch, concurrency), the policy's PrefetchHints
//     are loaded as storage requests like any other; on completion
//     OnPrefetched decides. A reader who reaches an object being prefetched
//     waits for that load (a miss and coalesced: it waited, as the daemon
//     counts it apart from its hits; the policy hears of the read, as a hit
//     it joined, when the bytes land). Only policies with a declared future
//     (future) give hints; the others never prefetch.
//   - The policy sees what the daemon shows it, in the same order: at the
//     job's start AddJob, SetSamples, SetOrder(0), SetOrder(1), BeginEpoch(0);
//     at the start of epoch K>0 SetOrder(K+1) (when K+1 < epochs), BeginEpoch(K);
//     OnHit at the access, OnMiss when the load completes (with load_ns); EndJob
//     at the end. Every Decision is applied to the store (capacity = budget):
//     evictions, then the admission; a refused insert is reported OnDropped.
//
// Deterministic: the same Trace and policy give the same result, bit for bit
// (events at equal times run in the order they were scheduled).
// Thread safety: Run is reentrant; runs share nothing but the const Trace.
#pragma once

#include <cstdint>

#include "epochfs/common/policy_kind.h"
#include "epochfs/common/status.h"
#include "epochfs/sim/run_result.h"
#include "epochfs/sim/trace.h"

namespace epochfs::sim {

struct EngineOptions {
  // Checks the policy's invariants every this many events (0: never). Tests.
  uint64_t check_every = 0;
};

Result<RunResult> Run(const Trace& trace, PolicyKind policy, const EngineOptions& opt = {});

}  // namespace epochfs::sim
