#include "epochfs/common/bytes_text.h"

#include <cstdio>

#include "epochfs/common/message_text.h"

namespace epochfs {
namespace {

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char ch) { return (ch >= 'A' && ch <= 'Z') ? char(ch - 'A' + 'a') : ch; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool IsBlank(char ch) { return ch == ' ' || ch == '\t'; }

struct Unit {
  std::string_view name;
  uint64_t factor;
};

constexpr uint64_t kKi = 1024;
constexpr Unit kSizeUnits[] = {
    {"", 1},
    {"b", 1},
    {"k", kKi},
    {"kib", kKi},
    {"kb", 1000},
    {"m", kKi* kKi},
    {"mib", kKi* kKi},
    {"mb", 1000 * 1000},
    {"g", kKi* kKi* kKi},
    {"gib", kKi* kKi* kKi},
    {"gb", 1000ull * 1000 * 1000},
    {"t", kKi* kKi* kKi* kKi},
    {"tib", kKi* kKi* kKi* kKi},
    {"tb", 1000ull * 1000 * 1000 * 1000},
};

}  // namespace

std::string HumanBytes(uint64_t bytes, int decimals) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, kUnits[u]);
  return buf;
}

Result<uint64_t> ParseBytes(std::string_view text) {
  auto bad = [&](const char* why) {
    return InvalidArgument("bad size " + QuoteText(text) + ": " + why);
  };
  std::string_view s = text;
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);

  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  std::string_view whole = s.substr(0, i);
  std::string_view frac;
  if (i < s.size() && s[i] == '.') {
    size_t start = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    frac = s.substr(start, i - start);
    if (frac.empty()) return bad("expected digits after '.'");
  }
  if (whole.empty()) {
    return bad(
        "expected a non-negative integer with an optional unit (k, KiB, M, MiB, G, GiB, "
        "T, TiB, KB, MB, GB, TB)");
  }
  std::string_view unit_text = s.substr(i);
  while (!unit_text.empty() && IsBlank(unit_text.front())) unit_text.remove_prefix(1);

  const Unit* unit = nullptr;
  for (const Unit& u : kSizeUnits) {
    if (EqualsNoCase(unit_text, u.name)) unit = &u;
  }
  if (unit == nullptr) {
    return bad("unknown unit (use k, KiB, M, MiB, G, GiB, T, TiB, KB, MB, GB or TB)");
  }
  if (!frac.empty() && unit->factor == 1) return bad("a fraction needs a unit");
  if (frac.size() > 9) return bad("too many fractional digits");

  uint64_t value = 0;
  for (char ch : whole) {
    if (__builtin_mul_overflow(value, 10u, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(ch - '0'), &value)) {
      return bad("too large");
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(value, unit->factor, &bytes)) return bad("too large");
  if (!frac.empty()) {
    // frac has at most 9 digits: f < 10^9 and factor <= 2^40, so f*factor fits in 128 bits.
    uint64_t f = 0;
    uint64_t scale = 1;
    for (char ch : frac) {
      f = f * 10 + static_cast<uint64_t>(ch - '0');
      scale *= 10;
    }
    unsigned __int128 part = static_cast<unsigned __int128>(f) * unit->factor / scale;
    if (__builtin_add_overflow(bytes, static_cast<uint64_t>(part), &bytes)) {
      return bad("too large");
    }
  }
  return bytes;
}

}  // namespace epochfs
