// What a simulated run yields: its counts, per job and per epoch, as the
// engine (engine.h, Run) fills them and the report (report.h) prints them.
// Plain values; no thread safety needed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace epochfs::sim {

// The disk tier's counts (DiskModel, disk_model.h).
struct DiskCounters {
  uint64_t budget_bytes = 0;
  uint64_t reads = 0, bytes_read = 0;      // objects served from the disk (readers', prefetches')
  uint64_t writes = 0, bytes_written = 0;  // objects written (SSD endurance)
  uint64_t skipped = 0;    // objects offered (loaded from LOWER, or moved down) and not written
  uint64_t evictions = 0;  // objects the placement let go
  uint64_t moved_up = 0;   // exclusive: objects that left the disk for RAM
  uint64_t max_used_bytes = 0;  // peak bytes on the disk
};

struct EpochResult {
  uint64_t hits = 0;
  uint64_t misses = 0;  // includes coalesced accesses
  uint64_t disk_reads = 0;  // misses served from the disk tier
  uint64_t start_ns = 0;
  uint64_t time_ns = 0;  // from the epoch's start to its last compute's end
  uint64_t stall_ns = 0;
};

struct JobResult {
  std::string name;
  uint64_t accesses = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;      // accesses - hits
  uint64_t coalesced = 0;   // misses that joined a load in flight (a reader's or a prefetch's)
  uint64_t bytes_read = 0;  // bytes this job's loads moved from storage
  uint64_t disk_reads = 0;  // misses served from the disk tier (not in bytes_read)
  uint64_t stall_ns = 0;
  uint64_t start_ns = 0;
  uint64_t completion_ns = 0;  // absolute time the job's last compute ended
  std::vector<EpochResult> epochs;
  double hit_ratio() const { return accesses ? double(hits) / double(accesses) : 0.0; }
};

struct RunResult {
  std::string policy;
  uint64_t budget_bytes = 0;
  uint64_t distinct_bytes = 0;
  std::vector<JobResult> jobs;
  uint64_t accesses = 0, hits = 0, misses = 0;
  uint64_t bytes_read = 0;  // from storage, all jobs (prefetch included)
  uint64_t admissions = 0, evictions = 0, refused = 0;
  // Prefetch: objects loaded ahead and admitted, their first reads, those
  // evicted unread, and the bytes of every prefetch load.
  uint64_t prefetched = 0, prefetch_hits = 0, prefetch_wasted = 0, prefetch_bytes = 0;
  uint64_t max_resident_bytes = 0;  // peak bytes in the store
  DiskCounters disk;                // the disk tier (all zero without one)
  uint64_t makespan_ns = 0;         // last completion − first start
  uint64_t total_stall_ns = 0;
  uint64_t events = 0;  // events processed (cost figure)
  double hit_ratio() const { return accesses ? double(hits) / double(accesses) : 0.0; }
};

}  // namespace epochfs::sim
