// Config: the daemon's settings as plain data, with the built-in defaults.
//
// Sources, in order: built-in defaults (this header), the TOML file
// (--config FILE), then `-o key=value` overrides. conf/epochfs.toml documents
// every key with its default; tests/unit/config ties the two together.
// Validation happens once, here: a loaded Config is always valid.
// The only file that includes toml++ is src/config/config.cc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs {

enum class Consistency { kImmutable, kOpen };
enum class PolicyKind { kLru, kEpoch };

struct Config {
  struct Cache {
    // cache.memory: bytes; 0 with memory_auto = "auto".
    uint64_t memory_bytes = 0;
    bool memory_auto = true;  // "auto": half of MemAvailable at mount time
    PolicyKind policy = PolicyKind::kLru;
    Consistency consistency = Consistency::kImmutable;
  } cache;
  struct Warmup {
    uint32_t batches = 0;  // 0: the whole first epoch (patent default)
  } warmup;
  struct PolicyParams {
    double gain_max = 2.0;  // λ_max
  } policy;
  struct Jobs {
    uint32_t orphan_grace = 600;  // seconds
  } jobs;
  struct Fuse {
    uint32_t threads = 0;  // 0: one per core
    uint32_t max_background = 64;
    double entry_timeout = 86400.0;  // seconds
    double attr_timeout = 86400.0;   // seconds
    bool allow_other = false;
  } fuse;
  struct Log {
    std::string level = "info";
  } log;
};

// Reads FILE over the defaults. Errors name the key and FILE:LINE.
Result<Config> LoadConfigFile(const std::string& path);
// Parses TOML text (for tests); `origin` names it in errors.
Result<Config> ParseConfig(std::string_view toml_text, const std::string& origin);
// Applies one `-o key=value` override. Errors name the key.
Status ApplyOverride(Config* config, std::string_view key, std::string_view value);
// True when `key` is a config key (as opposed to a FUSE/mount option).
bool IsConfigKey(std::string_view key);
// Every config key, dotted ("cache.memory", ...), in file order.
std::vector<std::string> ConfigKeys();

// "4GiB", "512MiB", "100k", "123" → bytes.
Result<uint64_t> ParseBytes(std::string_view text);

}  // namespace epochfs
