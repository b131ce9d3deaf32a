// Config loading: TOML file and `-o key=value` overrides, one key table.
//
// kKeys below is the single description of every key: its dotted name, how an
// `-o` string is read, what is expected (for error messages) and a setter that
// validates and stores. The TOML walker and ApplyOverride both go through it,
// so the two sources cannot accept different things.
//
// The text is parsed by ParseTomlText (common/toml_text.h), as are the
// planner's model files, the simulator's workloads and the job `config`.
#include "epochfs/config/config.h"
#include "epochfs/common/bytes_text.h"
#include "epochfs/common/listen_address.h"
#include "epochfs/common/message_text.h"
#include "epochfs/common/problem_list.h"
#include "epochfs/common/text_file.h"
#include "epochfs/common/toml_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <variant>

namespace epochfs {
namespace {

// A value as read from either source, before validation.
struct Table {};  // a TOML table, array or date: never a valid value here
using Raw = std::variant<int64_t, double, bool, std::string, Table>;

// How an `-o` string becomes a Raw.
enum class OptKind { kInteger, kFloat, kBool, kString };

// Stores `v` into `c` if valid; returns false (leaving `c` untouched) if not.
using Setter = bool (*)(Config* c, const Raw& v);

struct KeyDesc {
  std::string_view name;      // "cache.memory"
  OptKind opt_kind;           // how to read an `-o` value
  std::string_view expected;  // "expected <this>, got ..."
  Setter set;
};

// ---- value helpers ----------------------------------------------------------

bool GetInt(const Raw& v, int64_t lo, int64_t hi, int64_t* out) {
  const auto* i = std::get_if<int64_t>(&v);
  if (i == nullptr || *i < lo || *i > hi) return false;
  *out = *i;
  return true;
}

bool SetU32(const Raw& v, int64_t lo, int64_t hi, uint32_t* out) {
  int64_t i = 0;
  if (!GetInt(v, lo, hi, &i)) return false;
  *out = static_cast<uint32_t>(i);
  return true;
}

// Integers are accepted where a float is expected ("gain_max = 2").
bool SetDouble(const Raw& v, double lo, double hi, double* out) {
  double d = 0;
  if (const auto* f = std::get_if<double>(&v)) {
    d = *f;
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    d = static_cast<double>(*i);
  } else {
    return false;
  }
  if (!(d >= lo && d <= hi)) return false;  // also rejects NaN
  *out = d;
  return true;
}

bool SetBool(const Raw& v, bool* out) {
  const auto* b = std::get_if<bool>(&v);
  if (b == nullptr) return false;
  *out = *b;
  return true;
}

// Looks `v` up in `names`; stores the matching entry of `values`.
template <class T, size_t N>
bool SetEnum(const Raw& v, const std::string_view (&names)[N], const T (&values)[N], T* out) {
  const auto* s = std::get_if<std::string>(&v);
  if (s == nullptr) return false;
  for (size_t i = 0; i < N; ++i) {
    if (*s == names[i]) {
      *out = values[i];
      return true;
    }
  }
  return false;
}

bool SetMemory(Config* c, const Raw& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    if (*i <= 0) return false;
    c->cache.memory_bytes = static_cast<uint64_t>(*i);
    c->cache.memory_auto = false;
    return true;
  }
  const auto* s = std::get_if<std::string>(&v);
  if (s == nullptr) return false;
  if (*s == "auto") {
    c->cache.memory_bytes = 0;
    c->cache.memory_auto = true;
    return true;
  }
  Result<uint64_t> bytes = ParseBytes(*s);
  if (!bytes.ok() || bytes.value() == 0) return false;
  c->cache.memory_bytes = bytes.value();
  c->cache.memory_auto = false;
  return true;
}

// Bytes as an integer or a size string ("4GiB"), at least `min`.
bool SetBytes(const Raw& v, uint64_t min, uint64_t* out) {
  uint64_t b = 0;
  if (const auto* i = std::get_if<int64_t>(&v)) {
    if (*i < 0) return false;
    b = static_cast<uint64_t>(*i);
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    Result<uint64_t> parsed = ParseBytes(*s);
    if (!parsed.ok()) return false;
    b = parsed.value();
  } else {
    return false;
  }
  if (b < min) return false;
  *out = b;
  return true;
}

// Bytes ("512MiB", integer) or a percentage of total memory ("5%", 0 < p <= 100).
bool SetAmount(const Raw& v, MemoryAmount* out) {
  if (const auto* s = std::get_if<std::string>(&v); s != nullptr && !s->empty() &&
                                                    s->back() == '%') {
    const std::string num = s->substr(0, s->size() - 1);
    double p = 0;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), p);
    if (ec != std::errc() || end != num.data() + num.size() || !(p > 0.0 && p <= 100.0)) {
      return false;
    }
    *out = MemoryAmount::Percent(p);
    return true;
  }
  uint64_t b = 0;
  if (!SetBytes(v, 0, &b)) return false;
  *out = MemoryAmount::Bytes(b);
  return true;
}

// The policies the daemon runs (the simulator's baselines are not among them).
constexpr PolicyKind kPolicyValues[] = {PolicyKind::kLru, PolicyKind::kEpoch,
                                         PolicyKind::kFuture};
constexpr std::string_view kPolicyNames[] = {PolicyKindName(kPolicyValues[0]),
                                             PolicyKindName(kPolicyValues[1]),
                                             PolicyKindName(kPolicyValues[2])};
constexpr std::string_view kConsistencyNames[] = {"immutable", "open"};
constexpr Consistency kConsistencyValues[] = {Consistency::kImmutable, Consistency::kOpen};
constexpr std::string_view kReaddirPlusNames[] = {"auto", "always"};
constexpr ReaddirPlus kReaddirPlusValues[] = {ReaddirPlus::kAuto, ReaddirPlus::kAlways};
constexpr std::string_view kLevelNames[] = {"debug", "info", "warn", "error", "off"};

// ---- the key table (file order) ---------------------------------------------

constexpr uint32_t kMaxU32 = std::numeric_limits<uint32_t>::max();

const KeyDesc kKeys[] = {
    {"cache.memory", OptKind::kString, R"(bytes ("4GiB", integer) or "auto")", SetMemory},
    {"cache.policy", OptKind::kString, R"("lru", "epoch" or "future")",
     [](Config* c, const Raw& v) {
       return SetEnum(v, kPolicyNames, kPolicyValues, &c->cache.policy);
     }},
    {"cache.consistency", OptKind::kString, R"("immutable" or "open")",
     [](Config* c, const Raw& v) {
       return SetEnum(v, kConsistencyNames, kConsistencyValues, &c->cache.consistency);
     }},
    {"cache.metadata_entries", OptKind::kInteger, "integer 0..1000000000",
     [](Config* c, const Raw& v) {
       int64_t i = 0;
       if (!GetInt(v, 0, 1'000'000'000, &i)) return false;
       c->cache.metadata_entries = static_cast<uint64_t>(i);
       return true;
     }},
    {"cache.prefetch", OptKind::kInteger, "integer 0..1024",
     [](Config* c, const Raw& v) { return SetU32(v, 0, 1024, &c->cache.prefetch); }},
    {"cache.request_bytes", OptKind::kString, R"(bytes 0..1GiB ("32KiB", integer) or "auto")",
     [](Config* c, const Raw& v) {
       if (const auto* s = std::get_if<std::string>(&v); s != nullptr && *s == "auto") {
         c->cache.request_bytes = 0;
         c->cache.request_bytes_auto = true;
         return true;
       }
       uint64_t b = 0;
       if (!SetBytes(v, 0, &b) || b > (1u << 30)) return false;
       c->cache.request_bytes = b;
       c->cache.request_bytes_auto = false;
       return true;
     }},
    {"cache.weigh_hits", OptKind::kBool, "true or false",
     [](Config* c, const Raw& v) { return SetBool(v, &c->cache.weigh_hits); }},
    {"cache.block_size", OptKind::kString,
     R"(0, or bytes 64KiB..1GiB, a multiple of 4KiB ("4MiB", integer))",
     [](Config* c, const Raw& v) {
       uint64_t b = 0;
       if (!SetBytes(v, 0, &b)) return false;
       if (b != 0 && (b < (64u << 10) || b > (1u << 30) || b % 4096 != 0)) return false;
       c->cache.block_size = b;
       return true;
     }},
    {"cache.memory_margin", OptKind::kString, R"(bytes ("512MiB", integer) or a percentage ("5%"))",
     [](Config* c, const Raw& v) { return SetAmount(v, &c->cache.memory_margin); }},
    {"cache.memory_min", OptKind::kString, R"(bytes ("64MiB", integer) or a percentage ("1%"))",
     [](Config* c, const Raw& v) { return SetAmount(v, &c->cache.memory_min); }},
    {"cache.memory_max", OptKind::kString, R"(bytes ("32GiB", integer) or a percentage ("90%"))",
     [](Config* c, const Raw& v) { return SetAmount(v, &c->cache.memory_max); }},
    {"cache.governor_interval", OptKind::kFloat, "seconds 0.05..60",
     [](Config* c, const Raw& v) { return SetDouble(v, 0.05, 60.0, &c->cache.governor_interval); }},
    {"cache.governor_horizon", OptKind::kFloat, "seconds 0..1000000",
     [](Config* c, const Raw& v) { return SetDouble(v, 0.0, 1e6, &c->cache.governor_horizon); }},
    {"cache.governor_window", OptKind::kFloat, "seconds 1..3600",
     [](Config* c, const Raw& v) { return SetDouble(v, 1.0, 3600.0, &c->cache.governor_window); }},
    {"cache.disk_path", OptKind::kString, "a directory path (\"\" = no disk tier)",
     [](Config* c, const Raw& v) {
       const auto* s = std::get_if<std::string>(&v);
       if (s == nullptr || s->find('\0') != std::string::npos) return false;
       c->cache.disk_path = *s;
       return true;
     }},
    {"cache.disk_size", OptKind::kString, R"(bytes ("500GiB", integer) or "auto")",
     [](Config* c, const Raw& v) {
       if (const auto* s = std::get_if<std::string>(&v); s != nullptr && *s == "auto") {
         c->cache.disk_size = 0;
         c->cache.disk_size_auto = true;
         return true;
       }
       uint64_t b = 0;
       if (!SetBytes(v, 1, &b)) return false;
       c->cache.disk_size = b;
       c->cache.disk_size_auto = false;
       return true;
     }},
    {"cache.disk_margin", OptKind::kString, R"(bytes ("20GiB", integer) or a percentage ("10%"))",
     [](Config* c, const Raw& v) { return SetAmount(v, &c->cache.disk_margin); }},
    {"cache.disk_timeout", OptKind::kFloat, "seconds >= 0 (0: no bound)",
     [](Config* c, const Raw& v) {
       return SetDouble(v, 0.0, 86400.0 * 365, &c->cache.disk_timeout);
     }},
    {"warmup.batches", OptKind::kInteger, "integer >= 0",
     [](Config* c, const Raw& v) { return SetU32(v, 0, kMaxU32, &c->warmup.batches); }},
    {"policy.gain_max", OptKind::kFloat, "number 1.0..100",
     [](Config* c, const Raw& v) { return SetDouble(v, 1.0, 100.0, &c->policy.gain_max); }},
    {"jobs.orphan_grace", OptKind::kInteger, "integer seconds >= 0",
     [](Config* c, const Raw& v) { return SetU32(v, 0, kMaxU32, &c->jobs.orphan_grace); }},
    {"limits.jobs_per_user", OptKind::kInteger, "integer 1..1024",
     [](Config* c, const Raw& v) { return SetU32(v, 1, 1024, &c->limits.jobs_per_user); }},
    {"limits.control_files_per_user", OptKind::kInteger, "integer 1..65536",
     [](Config* c, const Raw& v) {
       return SetU32(v, 1, 65536, &c->limits.control_files_per_user);
     }},
    {"limits.control_bytes_per_user", OptKind::kString, R"(bytes >= 1MiB ("256MiB", integer))",
     [](Config* c, const Raw& v) {
       return SetBytes(v, 1ull << 20, &c->limits.control_bytes_per_user);
     }},
    {"limits.samples_per_user", OptKind::kInteger, "integer 1..4294967295",
     [](Config* c, const Raw& v) {
       uint32_t n = 0;
       if (!SetU32(v, 1, kMaxU32, &n)) return false;
       c->limits.samples_per_user = n;
       return true;
     }},
    {"limits.lower_files_per_user", OptKind::kInteger, "integer 1..65536",
     [](Config* c, const Raw& v) {
       return SetU32(v, 1, 65536, &c->limits.lower_files_per_user);
     }},
    {"limits.spill_files_per_user", OptKind::kInteger, "integer 1..65536",
     [](Config* c, const Raw& v) {
       return SetU32(v, 1, 65536, &c->limits.spill_files_per_user);
     }},
    {"limits.spill_bytes_per_user", OptKind::kString,
     R"(bytes ("16GiB", integer; 0 = no bound) or a share of the spill area ("33%"))",
     [](Config* c, const Raw& v) { return SetAmount(v, &c->limits.spill_bytes_per_user); }},
    {"limits.spill_entries_per_user", OptKind::kInteger, "integer 0..4294967295 (0 = no bound)",
     [](Config* c, const Raw& v) {
       return SetU32(v, 0, UINT32_MAX, &c->limits.spill_entries_per_user);
     }},
    {"limits.spill_schedule_steps", OptKind::kInteger, "integer 1..16777216",
     [](Config* c, const Raw& v) {
       return SetU32(v, 1, 1u << 24, &c->limits.spill_schedule_steps);
     }},
    {"lower.timeout", OptKind::kFloat, "seconds >= 0 (0: no bound)",
     [](Config* c, const Raw& v) { return SetDouble(v, 0.0, 86400.0 * 365, &c->lower.timeout); }},
    {"lower.workers", OptKind::kInteger, "integer 1..256",
     [](Config* c, const Raw& v) { return SetU32(v, 1, 256, &c->lower.workers); }},
    {"lower.read_slots", OptKind::kInteger, "integer 0..1024 (0: no bound)",
     [](Config* c, const Raw& v) { return SetU32(v, 0, 1024, &c->lower.read_slots); }},
    {"spill.path", OptKind::kString, "a directory path (\"\" = no spill area)",
     [](Config* c, const Raw& v) {
       const auto* s = std::get_if<std::string>(&v);
       if (s == nullptr || s->find('\0') != std::string::npos) return false;
       c->spill.path = *s;
       return true;
     }},
    {"spill.max_bytes", OptKind::kString, R"(bytes ("64GiB", integer; 0 = no quota))",
     [](Config* c, const Raw& v) { return SetBytes(v, 0, &c->spill.max_bytes); }},
    {"spill.compress", OptKind::kBool, "true or false",
     [](Config* c, const Raw& v) { return SetBool(v, &c->spill.compress); }},
    {"spill.staging", OptKind::kString, R"(bytes >= 4MiB ("256MiB", integer))",
     [](Config* c, const Raw& v) { return SetBytes(v, 4ull << 20, &c->spill.staging); }},
    {"spill.num_prefetch", OptKind::kInteger, "integer 0..1024",
     [](Config* c, const Raw& v) { return SetU32(v, 0, 1024, &c->spill.num_prefetch); }},
    {"spill.num_writeout", OptKind::kInteger, "integer 0..1024",
     [](Config* c, const Raw& v) { return SetU32(v, 0, 1024, &c->spill.num_writeout); }},
    {"spill.queue_depth", OptKind::kInteger, "integer 1..256",
     [](Config* c, const Raw& v) { return SetU32(v, 1, 256, &c->spill.queue_depth); }},
    {"fuse.threads", OptKind::kInteger, "integer 0..64 (0: two per core, at least 4; 16 with lower.read_slots)",
     [](Config* c, const Raw& v) { return SetU32(v, 0, 64, &c->fuse.threads); }},
    {"fuse.max_background", OptKind::kInteger, "integer 1..65535",
     [](Config* c, const Raw& v) { return SetU32(v, 1, 65535, &c->fuse.max_background); }},
    {"fuse.entry_timeout", OptKind::kFloat, "seconds >= 0",
     [](Config* c, const Raw& v) {
       return SetDouble(v, 0.0, std::numeric_limits<double>::max(), &c->fuse.entry_timeout);
     }},
    {"fuse.attr_timeout", OptKind::kFloat, "seconds >= 0",
     [](Config* c, const Raw& v) {
       return SetDouble(v, 0.0, std::numeric_limits<double>::max(), &c->fuse.attr_timeout);
     }},
    {"fuse.allow_other", OptKind::kBool, "true or false",
     [](Config* c, const Raw& v) { return SetBool(v, &c->fuse.allow_other); }},
    {"fuse.permission_timeout", OptKind::kFloat, "seconds >= 0",
     [](Config* c, const Raw& v) {
       return SetDouble(v, 0.0, std::numeric_limits<double>::max(), &c->fuse.permission_timeout);
     }},
    {"fuse.kernel_cache", OptKind::kBool, "true or false",
     [](Config* c, const Raw& v) { return SetBool(v, &c->fuse.kernel_cache); }},
    {"fuse.no_open", OptKind::kBool, "true or false",
     [](Config* c, const Raw& v) { return SetBool(v, &c->fuse.no_open); }},
    {"fuse.one_copy", OptKind::kBool, "true or false",
     [](Config* c, const Raw& v) { return SetBool(v, &c->fuse.one_copy); }},
    {"fuse.readdirplus", OptKind::kString, R"("auto" or "always")",
     [](Config* c, const Raw& v) {
       return SetEnum(v, kReaddirPlusNames, kReaddirPlusValues, &c->fuse.readdirplus);
     }},
    {"log.level", OptKind::kString, R"("debug", "info", "warn", "error" or "off")",
     [](Config* c, const Raw& v) {
       const auto* s = std::get_if<std::string>(&v);
       if (s == nullptr) return false;
       if (std::find(std::begin(kLevelNames), std::end(kLevelNames), *s) == std::end(kLevelNames)) {
         return false;
       }
       c->log.level = *s;
       return true;
     }},
    {"log.file", OptKind::kString, "a file path (\"\" = none)",
     [](Config* c, const Raw& v) {
       const auto* s = std::get_if<std::string>(&v);
       if (s == nullptr) return false;
       c->log.file = *s;
       return true;
     }},
    {"log.max_bytes", OptKind::kString, R"(bytes >= 64KiB ("10MiB", integer))",
     [](Config* c, const Raw& v) { return SetBytes(v, 64ull << 10, &c->log.max_bytes); }},
    {"log.files", OptKind::kInteger, "an integer 1..100",
     [](Config* c, const Raw& v) { return SetU32(v, 1, 100, &c->log.files); }},
    {"trace.file", OptKind::kString, "a file path (\"\" = off)",
     [](Config* c, const Raw& v) {
       const auto* s = std::get_if<std::string>(&v);
       if (s == nullptr) return false;
       c->trace.file = *s;
       return true;
     }},
    {"trace.max_bytes", OptKind::kString, R"(bytes >= 1MiB ("1GiB", integer))",
     [](Config* c, const Raw& v) { return SetBytes(v, 1ull << 20, &c->trace.max_bytes); }},
    {"metrics.listen", OptKind::kString,
     R"("ADDR:PORT" (a numeric IPv4 address, [IPv6] or localhost; port 1..65535) or "" (off))",
     [](Config* c, const Raw& v) {
       const auto* s = std::get_if<std::string>(&v);
       if (s == nullptr || (!s->empty() && !ParseListenAddress(*s).ok())) return false;
       c->metrics.listen = *s;
       return true;
     }},
};

const KeyDesc* FindKey(std::string_view name) {
  for (const KeyDesc& k : kKeys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string_view SectionOf(std::string_view key) { return key.substr(0, key.find('.')); }

bool IsSection(std::string_view name) {
  return std::any_of(std::begin(kKeys), std::end(kKeys),
                     [&](const KeyDesc& k) { return SectionOf(k.name) == name; });
}

std::string KnownSections() {
  std::string out;
  std::string_view last;
  for (const KeyDesc& k : kKeys) {
    if (SectionOf(k.name) == last) continue;
    last = SectionOf(k.name);
    if (!out.empty()) out += ", ";
    out += last;
  }
  return out;
}

// ---- messages ---------------------------------------------------------------

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// " (did you mean cache.memory?)" for a near miss, else "".
std::string Suggestion(std::string_view name) {
  const KeyDesc* best = nullptr;
  size_t best_d = 3;  // at most two edits away
  for (const KeyDesc& k : kKeys) {
    size_t d = EditDistance(name, k.name);
    if (d < best_d) {
      best_d = d;
      best = &k;
    }
  }
  return best ? " (did you mean " + std::string(best->name) + "?)" : "";
}

// ---- TOML side --------------------------------------------------------------

Raw ToRaw(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::integer:
      return n.as_integer()->get();
    case toml::node_type::floating_point:
      return n.as_floating_point()->get();
    case toml::node_type::boolean:
      return n.as_boolean()->get();
    case toml::node_type::string:
      return n.as_string()->get();
    default:
      return Table{};
  }
}

class Walker {
 public:
  explicit Walker(const std::string& origin) : origin_(origin) {}

  void Section(std::string_view name, const toml::node& node, Config* c) {
    if (!IsSection(name)) {
      Add(node, std::string(name) + ": unknown section (known: " + KnownSections() + ")");
      return;
    }
    const toml::table* t = node.as_table();
    if (t == nullptr) {
      Add(node, std::string(name) + ": expected a table [" + std::string(name) + "], got " +
                    TomlValueText(node));
      return;
    }
    for (auto&& [k, v] : *t) {
      std::string dotted = std::string(name) + "." + std::string(k.str());
      const KeyDesc* desc = FindKey(dotted);
      if (desc == nullptr) {
        Add(v, dotted + ": unknown key" + Suggestion(dotted));
      } else if (!desc->set(c, ToRaw(v))) {
        Add(v, dotted + ": expected " + std::string(desc->expected) + ", got " + TomlValueText(v));
      }
    }
  }

  void TopLevel(std::string_view name, const toml::node& node) {
    std::string why = std::string(name) + ": unknown key";
    std::string hint = Suggestion(name);
    if (hint.empty()) {
      // A bare "memory = ..." probably belongs in a section.
      for (const KeyDesc& k : kKeys) {
        if (k.name.substr(k.name.find('.') + 1) == name) {
          hint = " (keys live in sections: did you mean " + std::string(k.name) + "?)";
          break;
        }
      }
    }
    Add(node, why + hint);
  }

  // All problems, one per line, in file order.
  Status Finish() { return problems_.Finish(); }

 private:
  void Add(const toml::node& at, const std::string& what) {
    AddTomlProblem(problems_, origin_, at, what);
  }

  const std::string& origin_;
  ProblemList problems_;
};

// ---- `-o` side --------------------------------------------------------------

// Reads an `-o` string as the key's type into *out; false if it is not one.
// (Out-parameter rather than optional<Raw>: g++ 12 with sanitizers warns,
// wrongly, about an uninitialised string inside optional<variant<...>>.)
bool FromOption(OptKind kind, std::string_view s, Raw* out) {
  switch (kind) {
    case OptKind::kString:
      out->emplace<std::string>(s);
      return true;
    case OptKind::kBool:
      if (s != "true" && s != "false") return false;
      out->emplace<bool>(s == "true");
      return true;
    case OptKind::kInteger: {
      int64_t i = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
      if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return false;
      out->emplace<int64_t>(i);
      return true;
    }
    case OptKind::kFloat: {
      // from_chars accepts "inf"/"nan"; the setters' range checks reject them.
      double d = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return false;
      out->emplace<double>(d);
      return true;
    }
  }
  return false;
}

}  // namespace

Result<Config> ParseConfig(std::string_view toml_text, const std::string& origin) {
  Result<toml::table> parsed = ParseTomlText(toml_text, origin);
  if (!parsed.ok()) return parsed.status();
  const toml::table root = std::move(parsed).value();

  Config config;
  Walker walker(origin);
  for (auto&& [k, v] : root) {
    if (v.is_table() || IsSection(k.str())) {
      walker.Section(k.str(), v, &config);
    } else {
      walker.TopLevel(k.str(), v);
    }
  }
  Status s = walker.Finish();
  if (!s.ok()) return s;
  return config;
}

Result<Config> LoadConfigFile(const std::string& path) {
  auto text = ReadTextFile(path, "config file");
  if (!text.ok()) return text.status();
  return ParseConfig(text.value(), path);
}

Status ApplyOverride(Config* config, std::string_view key, std::string_view value) {
  const KeyDesc* desc = FindKey(key);
  if (desc == nullptr) {
    return InvalidArgument("-o " + std::string(key) + ": unknown config key" + Suggestion(key));
  }
  Raw raw;
  Config updated = *config;
  if (!FromOption(desc->opt_kind, value, &raw) || !desc->set(&updated, raw)) {
    return InvalidArgument("-o " + std::string(key) + ": expected " + std::string(desc->expected) +
                           ", got " + QuoteText(value));
  }
  *config = std::move(updated);
  return Status::Ok();
}

bool IsConfigKey(std::string_view key) { return FindKey(key) != nullptr; }

std::vector<std::string> ConfigKeys() {
  std::vector<std::string> keys;
  for (const KeyDesc& k : kKeys) keys.emplace_back(k.name);
  return keys;
}

}  // namespace epochfs
