// Config: the daemon's settings as plain data, with the built-in defaults.
//
// Sources, in order: built-in defaults (this header), the TOML file
// (--config FILE), then `-o key=value` overrides. conf/epochfs.toml documents
// every key with its default; tests/unit/config ties the two together.
// Validation happens once, here: a loaded Config is always valid.
// toml++ is included only by src/config/config.cc, the planner's model file
// loader (src/plan/model_file.cc) and the simulator's workload loader
// (src/sim/workload.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "epochfs/common/policy_kind.h"
#include "epochfs/common/status.h"

namespace epochfs {

enum class Consistency { kImmutable, kOpen };
// When a listing gives the kernel every entry's attributes (READDIRPLUS).
enum class ReaddirPlus { kAuto, kAlways };

// An amount in bytes or as a percentage of a whole: "512MiB", 1048576, "5%".
// For cache.memory* the whole is the memory the daemon may use (the smaller of
// MemTotal and its cgroup's limit); for limits.spill_bytes_per_user it is the
// spill area's size.
struct MemoryAmount {
  uint64_t bytes = 0;
  double percent = 0.0;     // 0 < percent <= 100 when is_percent
  bool is_percent = false;
  uint64_t Of(uint64_t total) const {
    return is_percent ? static_cast<uint64_t>(static_cast<double>(total) * percent / 100.0)
                      : bytes;
  }
  static MemoryAmount Bytes(uint64_t b) { return {b, 0.0, false}; }
  static MemoryAmount Percent(double p) { return {0, p, true}; }
  bool operator==(const MemoryAmount&) const = default;
};

struct Config {
  struct Cache {
    // cache.memory: bytes; 0 with memory_auto = "auto".
    uint64_t memory_bytes = 0;
    bool memory_auto = true;  // "auto": the memory governor (docs/governor.md)
    PolicyKind policy = PolicyKind::kFuture;  // docs/future_policy.md: why
    Consistency consistency = Consistency::kImmutable;
    // cache.metadata_entries: under "immutable", the LOWER paths whose
    // attributes, and the listed names, the daemon remembers so that a
    // cached file's lookups, stats and listings cost LOWER nothing
    // (store/known_lower.h: ~100 bytes each); 0: none.
    uint64_t metadata_entries = 2'000'000;
    // cache.prefetch: LOWER reads in flight loading what the jobs declared
    // they read next (the "future" policy's hints); 0: no prefetch.
    uint32_t prefetch = 128;
    // cache.request_bytes: what one LOWER request costs beyond its bytes, in
    // bytes of transfer (the future policy's weighing of file sizes); 0: the
    // store's bandwidth binds (docs/future_policy.md, "What a miss costs").
    uint64_t request_bytes = 0;
    // "auto", the default: measured from the loads (cache::RequestCost),
    // starting at 0; request_bytes is then 0.
    bool request_bytes_auto = true;
    // cache.weigh_hits: the future policy weighs a hit by what it saves the
    // job reading it, its loaders' share of time waiting for storage
    // (docs/future_policy.md, "What a hit is worth"; off: measured worse).
    bool weigh_hits = false;
    // cache.block_size: a file larger than the largest object cached whole (a
    // quarter of the budget, at most 1 GiB) is cached in blocks of this many
    // bytes, each under the policy as an object of its own; 0: such files are
    // streamed from LOWER uncached.
    uint64_t block_size = 4ull << 20;
    // The memory governor (memory_auto only): budget = total − predicted peak
    // of the memory used outside the cache − margin, within [min, max].
    MemoryAmount memory_margin = MemoryAmount::Percent(5.0);
    MemoryAmount memory_min = MemoryAmount::Bytes(64ull << 20);
    MemoryAmount memory_max = MemoryAmount::Percent(90.0);
    double governor_interval = 0.5;  // seconds between samples
    double governor_horizon = 30.0;  // seconds of extrapolation when no job's end is known
    double governor_window = 30.0;   // seconds of samples in the fit
    // cache.disk_path: a directory on local SSD for the disk tier
    // (docs/disk_tier.md); "" = no disk tier.
    std::string disk_path;
    // cache.disk_size: bytes; 0 with disk_size_auto ("auto": the filesystem's
    // free space less disk_margin, re-checked as it fills).
    uint64_t disk_size = 0;
    bool disk_size_auto = true;
    // cache.disk_margin: kept free on the disk tier's filesystem ("auto"):
    // bytes, or a percentage of the filesystem's size.
    MemoryAmount disk_margin = MemoryAmount::Percent(10.0);
    // cache.disk_timeout: seconds each call on the disk tier's directory may
    // take, its start (the lock, the index) included, before the tier is
    // taken for a disk that stopped answering and fails (0: no bound). Its
    // own bound, not lower.timeout's: a local SSD answers in milliseconds.
    double disk_timeout = 5.0;
    bool operator==(const Cache&) const = default;
  } cache;
  struct Warmup {
    uint32_t batches = 0;  // 0: the whole first epoch (patent default)
    bool operator==(const Warmup&) const = default;
  } warmup;
  struct PolicyParams {
    double gain_max = 2.0;  // λ_max
    bool operator==(const PolicyParams&) const = default;
  } policy;
  struct Jobs {
    uint32_t orphan_grace = 600;  // seconds
    bool operator==(const Jobs&) const = default;
  } jobs;
  // Per-user bounds on what a user of a shared mount can make the daemon
  // hold (docs/security.md). Root is not bounded.
  struct Limits {
    uint32_t jobs_per_user = 64;                  // registered jobs
    uint32_t control_files_per_user = 64;         // control files open for writing
    uint64_t control_bytes_per_user = 256ull << 20;  // bytes buffered in them
    uint32_t spill_files_per_user = 256;          // spill files open (a descriptor each)
    uint32_t lower_files_per_user = 256;          // streamed dataset files open (a descriptor
                                                  // each)
    uint32_t spill_schedule_steps = 65536;        // steps of one job's spill_schedule
    uint64_t samples_per_user = uint64_t{1} << 23;  // samples of one user's jobs together
    // Logical bytes of one user's spill files together: bytes, or a share of
    // spill.max_bytes (of the spill filesystem's size when that is 0).
    MemoryAmount spill_bytes_per_user = MemoryAmount::Percent(33.0);
    // Files and directories one user other than root may hold in the spill
    // area (0: no bound).
    uint32_t spill_entries_per_user = 65536;
    bool operator==(const Limits&) const = default;
  } limits;
  // Bounds on LOWER operations (a hung NFS server or s3 mount): each is
  // given up on after `timeout` seconds (ETIMEDOUT to the reader; 0: no
  // bound), run on `workers` threads (store/lower_gate.h). At most
  // `read_slots` readers' loads at once, the job nearest its end first
  // (store/read_slots.h; 0: no bound).
  struct LowerOps {
    double timeout = 60.0;
    uint32_t workers = 8;
    uint32_t read_slots = 1;
    bool operator==(const LowerOps&) const = default;
  } lower;
  struct Spill {
    // spill.path: directory on local SSD for MOUNTPOINT/.spill/; "" = no
    // spill area (the rest of the mount is read-only anyway).
    std::string path;
    uint64_t max_bytes = 0;               // quota on logical bytes; 0: none
    bool compress = true;                 // zero-value compression of chunks
    uint64_t staging = 256ull << 20;      // RAM staging buffer, bytes
    uint32_t num_prefetch = 2;            // steps ahead the scheduler prefetches
    uint32_t num_writeout = 2;            // steps ahead a file must be needed to stay
    uint32_t queue_depth = 16;            // io_uring requests in flight
    bool operator==(const Spill&) const = default;
  } spill;
  struct Fuse {
    uint32_t threads = 0;  // 0: two per core, at least 4
    uint32_t max_background = 64;
    double entry_timeout = 86400.0;  // seconds
    double attr_timeout = 86400.0;   // seconds
    bool allow_other = false;
    // With allow_other, entry and attribute timeouts of dataset files are at
    // most this (seconds): the kernel checks permissions against the owner and
    // mode it holds, so a chmod or chown in LOWER is seen within this bound.
    double permission_timeout = 10.0;
    // Serve repeat reads of unchanged files from the kernel page cache (every
    // open still reaches the daemon, so every access is still seen).
    bool kernel_cache = true;
    // No OPEN and FLUSH for dataset files: hot reads cost no request; the
    // control directory is then a session of its own (needs root; docs/
    // architecture.md, "Hot reads without OPEN").
    bool no_open = false;
    // With no_open: a cached file the kernel holds whole is handed over to its
    // page cache and the daemon frees its copy (one copy of each cached byte).
    bool one_copy = true;
    // "auto": attributes with a chunk of a listing once the reader has looked
    // entries up (the kernel's advice; the first chunk is answered short and
    // without them); "always": with every chunk.
    ReaddirPlus readdirplus = ReaddirPlus::kAuto;
    bool operator==(const Fuse&) const = default;
  } fuse;
  struct Log {
    std::string level = "info";  // "debug" | "info" | "warn" | "error" | "off"
    // log.file: every line also goes to this file ("" = none), rotated when
    // it would pass max_bytes, `files` older ones kept (epochfs.log:
    // epochfs.1.log ... epochfs.N.log).
    std::string file;
    uint64_t max_bytes = 10ull << 20;
    uint32_t files = 5;
    bool operator==(const Log&) const = default;
  } log;
  struct Trace {
    // trace.file: record every call the cache policy gets, one JSON line each,
    // for `epochfs sim --replay` ("" = off).
    std::string file;
    // trace.max_bytes: the trace stops (with a warning) before it would grow
    // past this; what it holds still replays.
    uint64_t max_bytes = 1ull << 30;
    bool operator==(const Trace&) const = default;
  } trace;
  struct Metrics {
    // metrics.listen: "ADDR:PORT" where the daemon serves GET /metrics over
    // HTTP, the aggregates only (common/listen_address.h); "" = off.
    std::string listen;
    bool operator==(const Metrics&) const = default;
  } metrics;

  // Field-by-field; the tie test compares a loaded conf/epochfs.toml to Config{}.
  bool operator==(const Config&) const = default;
};

// Reads FILE over the defaults. A file that cannot be read is NotFound,
// PermissionDenied or IoError; anything wrong inside it is InvalidArgument:
// a TOML syntax error names FILE:LINE:COLUMN, a bad key or value names
// FILE:LINE and the dotted key (one line per problem, in file order).
Result<Config> LoadConfigFile(const std::string& path);
// Parses TOML text (for tests); `origin` names it in errors.
Result<Config> ParseConfig(std::string_view toml_text, const std::string& origin);
// Applies one `-o key=value` override; `value` is parsed by the key's type
// ("true"/"false", numbers, sizes, enum names). Errors are InvalidArgument
// naming `-o KEY`; on error *config is unchanged. REQUIRES: config != nullptr.
Status ApplyOverride(Config* config, std::string_view key, std::string_view value);
// True when `key` is a config key (as opposed to a FUSE/mount option).
bool IsConfigKey(std::string_view key);
// Every config key, dotted ("cache.memory", ...), in file order.
std::vector<std::string> ConfigKeys();

}  // namespace epochfs
