// The look-alike options of other dataset mounts (option_hints.h).
#include "epochfs/config/option_hints.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "epochfs/common/bytes_text.h"

namespace epochfs {
namespace {

enum class Kind {
  kBytes,        // a size; a plain number is in `unit` bytes
  kSeconds,      // a duration: "5", "5s", "2m", "1h"
  kCount,        // an integer, passed as it is
  kLogLevel,     // rclone's and JuiceFS's level names
  kConsistency,  // mountpoint-s3's --metadata-ttl
  kFlag,         // no value: a FUSE option (`target`)
  kNote,         // no equivalent to set: `target` says what epochfs does
  kNoteValue,    // the same, for an option that takes a value
};

struct Entry {
  std::string_view name;
  std::string_view tool;
  Kind kind;
  std::string_view target;  // a config key, a FUSE option or a note
  uint64_t unit = 1;        // kBytes: bytes per unit of a plain number
};

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = kKiB * 1024;

constexpr std::string_view kNoDiskCache =
    "nothing to set: epochfs keeps dataset files in memory (-o cache.memory=SIZE), "
    "it has no disk cache for them";
constexpr std::string_view kBackground =
    "nothing to set: epochfs goes to the background unless -f is given";

// JuiceFS `juicefs mount`, rclone `rclone mount`, mountpoint-s3 `mount-s3`:
// the options their users carry over most, by their documented names.
constexpr Entry kEntries[] = {
    {"cache-size", "JuiceFS", Kind::kBytes, "cache.memory", kMiB},
    {"max-cache-size", "mountpoint-s3", Kind::kBytes, "cache.memory", kMiB},
    {"vfs-cache-max-size", "rclone", Kind::kBytes, "cache.memory", kKiB},
    {"cache-dir", "JuiceFS, rclone", Kind::kNoteValue, kNoDiskCache},
    {"cache", "mountpoint-s3", Kind::kNoteValue, kNoDiskCache},
    {"vfs-cache-mode", "rclone", Kind::kNoteValue,
     "nothing to set: epochfs caches whole files in memory (-o cache.memory=SIZE)"},
    {"prefetch", "JuiceFS", Kind::kCount, "cache.prefetch"},
    {"max-threads", "mountpoint-s3", Kind::kCount, "fuse.threads"},
    {"attr-cache", "JuiceFS", Kind::kSeconds, "fuse.attr_timeout"},
    {"entry-cache", "JuiceFS", Kind::kSeconds, "fuse.entry_timeout"},
    {"attr-timeout", "rclone", Kind::kSeconds, "fuse.attr_timeout"},
    {"dir-cache-time", "rclone", Kind::kSeconds, "fuse.entry_timeout"},
    {"metadata-ttl", "mountpoint-s3", Kind::kConsistency, "cache.consistency"},
    {"log-level", "rclone, JuiceFS", Kind::kLogLevel, "log.level"},
    {"allow-other", "rclone, mountpoint-s3", Kind::kFlag, "allow_other"},
    {"allow-root", "rclone, mountpoint-s3", Kind::kFlag, "allow_root"},
    {"auto-unmount", "mountpoint-s3", Kind::kFlag, "auto_unmount"},
    {"read-only", "rclone, mountpoint-s3", Kind::kNote,
     "nothing to set: the dataset view is always read-only"},
    {"daemon", "rclone", Kind::kNote, kBackground},
    {"background", "JuiceFS", Kind::kNote, kBackground},
};

const Entry* Find(std::string_view name) {
  std::string norm(name);
  for (char& c : norm) {
    if (c == '_') c = '-';
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const Entry& e : kEntries) {
    if (e.name == norm) return &e;
  }
  return nullptr;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Bytes in the largest binary unit that divides them exactly ("1GiB").
std::string ExactBytes(uint64_t b) {
  static constexpr std::pair<uint64_t, std::string_view> kUnits[] = {
      {kMiB * kMiB, "TiB"}, {kMiB * kKiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}};
  for (const auto& [factor, unit] : kUnits) {
    if (b != 0 && b % factor == 0) return std::to_string(b / factor) + std::string(unit);
  }
  return std::to_string(b);
}

std::string BytesValue(std::string_view v, uint64_t unit) {
  if (AllDigits(v) && v.size() <= 12) {  // no overflow: < 10^12 units of at most 1 MiB
    return ExactBytes(std::strtoull(std::string(v).c_str(), nullptr, 10) * unit);
  }
  Result<uint64_t> b = ParseBytes(v);
  return b.ok() ? ExactBytes(b.value()) : "SIZE";
}

std::string SecondsValue(std::string_view v) {
  uint64_t factor = 1;
  if (!v.empty() && (v.back() == 's' || v.back() == 'm' || v.back() == 'h')) {
    factor = v.back() == 'h' ? 3600 : v.back() == 'm' ? 60 : 1;
    v.remove_suffix(1);
  }
  if (!AllDigits(v) || v.size() > 9) return "SECONDS";
  return std::to_string(std::strtoull(std::string(v).c_str(), nullptr, 10) * factor);
}

std::string LogLevelValue(std::string_view v) {
  std::string l(v);
  for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "notice") return "info";
  if (l == "warning") return "warn";
  if (l == "debug" || l == "info" || l == "warn" || l == "error" || l == "off") return l;
  return "LEVEL";
}

}  // namespace

std::optional<OptionHint> HintForOption(std::string_view name, std::string_view value) {
  const Entry* e = Find(name);
  if (e == nullptr) return std::nullopt;
  OptionHint h{std::string(e->tool), ""};
  const std::string key(e->target);
  switch (e->kind) {
    case Kind::kBytes:
      h.instead = "use -o " + key + "=" + (value.empty() ? "SIZE" : BytesValue(value, e->unit));
      break;
    case Kind::kSeconds:
      h.instead = "use -o " + key + "=" + (value.empty() ? "SECONDS" : SecondsValue(value));
      break;
    case Kind::kCount:
      h.instead = "use -o " + key + "=" + (AllDigits(value) ? std::string(value) : "N");
      break;
    case Kind::kLogLevel:
      h.instead = "use -o " + key + "=" + LogLevelValue(value);
      break;
    case Kind::kConsistency:
      // "indefinite": metadata never re-checked; any TTL: re-checked, the
      // nearest being a stat at each open.
      h.instead = "use -o " + key + "=" + (value == "indefinite" ? "immutable" : "open");
      break;
    case Kind::kFlag:
      h.instead = "use -o " + key;
      break;
    case Kind::kNote:
    case Kind::kNoteValue:
      h.instead = std::string(e->target);
      break;
  }
  return h;
}

bool HintedOptionTakesValue(std::string_view name) {
  const Entry* e = Find(name);
  return e != nullptr && e->kind != Kind::kFlag && e->kind != Kind::kNote;
}

}  // namespace epochfs
