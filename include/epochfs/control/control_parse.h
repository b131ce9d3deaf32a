// Parsers for the files a job writes under .epochfs/jobs/NAME/ (protocol v1,
// man/epochfs-control.7): config, samples, order/K, epoch, pids.
//
// Every parser is a pure function from the complete text of one write (the
// fs layer hands over the buffered content at flush) to a Result. Nothing is
// partially accepted: a file is valid as a whole or rejected as a whole.
//
// Errors: always InvalidArgument, with a message meant for a human reading the
// job's `status` (last_error): it names the line (config, samples, pids) or the
// token position (order) and quotes the offending text, shortened and with
// non-printable bytes escaped. Messages never contain raw control bytes.
//
// Thread safety: all functions are pure and thread-safe.
// Limits: the fs layer refuses control writes longer than
// kMaxControlFileBytes before calling these (the parsers check it too).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "epochfs/control/path_list.h"
#include "epochfs/common/status.h"

namespace epochfs::control {

inline constexpr size_t kMaxControlFileBytes = size_t{1} << 30;  // 1 GiB
inline constexpr size_t kMaxPathBytes = 4096;                     // one samples line
inline constexpr uint32_t kMaxBatchSize = 1'000'000;
inline constexpr uint32_t kMaxEpochs = 1'000'000;                 // epochs are 0 .. epochs-1
inline constexpr uint32_t kMaxLoaders = 1024;
inline constexpr double kMaxComputeMs = 1e9;
inline constexpr pid_t kMaxPid = 4'194'304;                       // PID_MAX_LIMIT on 64-bit Linux

// The job's `config` file.
struct JobConfig {
  uint32_t batch_size = 0;            // required, 1 .. kMaxBatchSize
  uint32_t epochs = 0;                // required, 1 .. kMaxEpochs
  std::string root;                   // normalised dataset subdir; "" = the dataset root
  uint32_t loaders = 1;               // parallel loader processes (hint), 1 .. kMaxLoaders
  std::optional<double> compute_ms;   // compute per batch the job reports, >= 0

  bool operator==(const JobConfig&) const = default;
};

// What a relative path names: a sample file, or the dataset subdir `root`.
enum class PathKind : uint8_t { kFile, kDirectory };

// Checks and normalises a path relative to the dataset root: repeated '/' and
// "." components are dropped; absolute paths, ".." components, NUL, '\r',
// paths over kMaxPathBytes and (kFile) empty paths or a trailing '/' are
// InvalidArgument. kDirectory accepts "" and "." (the root itself) as "".
Result<std::string> NormaliseRelativePath(std::string_view path, PathKind kind);

// `config`: TOML (TOML++), at most kMaxJobConfigBytes. Keys: batch_size,
// epochs (required), root, loaders, compute_ms (optional); any TOML form of
// a value is accepted (0x20, 1_024, '\u00e9' escapes, literal strings).
// A syntax error is "line L, column C: TOML syntax error: ..."; an unknown key
// (tables and dotted keys included), a wrong type or an out-of-range value
// is "line L: ..." naming the key. All InvalidArgument.
inline constexpr size_t kMaxJobConfigBytes = 64 * 1024;
Result<JobConfig> ParseJobConfig(std::string_view text);

// The accepted config as reading `config` shows it: every key, one per line,
// valid TOML (strings escaped) that ParseJobConfig reads back to `c`.
std::string FormatJobConfig(const JobConfig& c);

// `samples`: one path per line (NormaliseRelativePath, kFile); sample k is
// line k (0-based index, messages count lines from 1). Empty lines are errors,
// except that the text may end with one '\n'. Duplicates (after
// normalisation) are errors naming both lines. At least one sample; at most
// UINT32_MAX - 1.
Result<PathList> ParseSampleList(std::string_view text);

// `spill_schedule`: the spill file each step uses, one path per line relative
// to the mount's .spill/ (NormaliseRelativePath, kFile), in order of use; a
// file may appear on several lines (a layer's data used forward and
// backward). Same line rules and limits as ParseSampleList, duplicates allowed.
Result<std::vector<std::string>> ParseSpillSchedule(std::string_view text);

// `progress`: one non-negative integer, the index of the step just finished
// (blanks around it allowed).
Result<uint64_t> ParseProgress(std::string_view text);

// `order/K`: whitespace-separated decimal sample indices, each < sample_count
// and listed at most once (a permutation of a subset; at least one index).
// Signs, garbage, indices out of range and duplicates are errors naming the
// token position (1-based) and its line.
Result<std::vector<uint32_t>> ParseOrder(std::string_view text, size_t sample_count);

// `epoch`: one decimal integer K, 0 <= K < kMaxEpochs, surrounded by optional
// whitespace.
Result<uint32_t> ParseEpochMarker(std::string_view text);

// `position`: "K P", two decimal integers separated by blanks (blanks around
// them allowed): the job has handed out the first P samples of epoch K's
// declared order to its loaders. 0 <= K < kMaxEpochs, 0 <= P < 2^32 - 1.
struct PositionReport {
  uint32_t epoch = 0;
  uint64_t position = 0;
};
Result<PositionReport> ParsePosition(std::string_view text);

// The K in `order/K`: canonical decimal (no sign, no leading zeros), < kMaxEpochs.
// Used by the fs layer for lookup/create of order files.
Result<uint32_t> ParseOrderFileName(std::string_view name);

// `pids`: one pid per line (1 .. kMaxPid), blanks around it tolerated, no empty
// lines except a final '\n'. The empty text is an empty list. Repeated pids
// are kept once (first occurrence order).
Result<std::vector<pid_t>> ParsePidList(std::string_view text);

// For messages: `s` in double quotes, bytes outside printable ASCII as \xNN,
// cut after max_bytes with "...".
std::string QuoteForMessage(std::string_view s, size_t max_bytes = 80);

}  // namespace epochfs::control
