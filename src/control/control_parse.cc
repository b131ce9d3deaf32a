#include "epochfs/control/control_parse.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "epochfs/common/hash.h"
#include "epochfs/common/toml_text.h"

namespace epochfs::control {
namespace {

constexpr std::string_view kKnownKeys = "batch_size, epochs, root, loaders, compute_ms";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string LineMsg(size_t line, const std::string& what) {
  return "line " + std::to_string(line) + ": " + what;
}

Status TooLarge(std::string_view text) {
  if (text.size() > kMaxControlFileBytes) {
    return InvalidArgument("file too large (" + std::to_string(text.size()) + " bytes, limit " +
                           std::to_string(kMaxControlFileBytes) + ")");
  }
  return Status::Ok();
}

// Splits text into lines at '\n'. A final '\n' does not start another line.
template <class Fn>
Status ForEachLine(std::string_view text, Fn&& fn) {
  size_t line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view l = nl == std::string_view::npos ? text.substr(pos) : text.substr(pos, nl - pos);
    ++line;
    Status s = fn(line, l);
    if (!s.ok()) return s;
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return Status::Ok();
}

// Whether `p` is a file path NormaliseRelativePath would return unchanged:
// not empty, no NUL or '\r', relative, and every component a name (not
// empty, ".", or "..").
bool IsNormalFilePath(std::string_view p) {
  if (p.empty() || p.size() > kMaxPathBytes) return false;
  size_t start = 0;
  for (size_t i = 0; i <= p.size(); ++i) {
    if (i < p.size() && p[i] != '/') {
      if (p[i] == '\0' || p[i] == '\r') return false;
      continue;
    }
    const std::string_view comp = p.substr(start, i - start);
    if (comp.empty() || comp == "." || comp == "..") return false;
    start = i + 1;
  }
  return true;
}

// Decimal digits only → uint64, false on overflow or empty/non-digit input.
bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::string QuoteForMessage(std::string_view s, size_t max_bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  size_t n = std::min(s.size(), max_bytes);
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  out.push_back('"');
  if (s.size() > n) out += "...";
  return out;
}

Result<std::string> NormaliseRelativePath(std::string_view path, PathKind kind) {
  if (path.size() > kMaxPathBytes) {
    return InvalidArgument("path longer than " + std::to_string(kMaxPathBytes) + " bytes");
  }
  if (path.find('\0') != std::string_view::npos) {
    return InvalidArgument("NUL byte in path " + QuoteForMessage(path));
  }
  if (path.find('\r') != std::string_view::npos) {
    return InvalidArgument("carriage return in path " + QuoteForMessage(path) +
                           " (Windows line endings?)");
  }
  if (!path.empty() && path[0] == '/') {
    return InvalidArgument("absolute path " + QuoteForMessage(path) +
                           " (paths are relative to the dataset root)");
  }
  if (kind == PathKind::kFile && !path.empty() && path.back() == '/') {
    return InvalidArgument("path " + QuoteForMessage(path) + " ends in '/' (names a directory)");
  }
  std::string out;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view comp = path.substr(pos, slash - pos);
    pos = slash + 1;
    if (comp.empty() || comp == ".") continue;
    if (comp == "..") {
      return InvalidArgument("'..' component in path " + QuoteForMessage(path));
    }
    if (!out.empty()) out.push_back('/');
    out.append(comp);
  }
  if (out.empty() && kind == PathKind::kFile) {
    return InvalidArgument(path.empty() ? std::string("empty path")
                                        : "path " + QuoteForMessage(path) + " names no file");
  }
  return out;
}

Result<JobConfig> ParseJobConfig(std::string_view text) {
  if (text.size() > kMaxJobConfigBytes) {
    return InvalidArgument("file too large (" + std::to_string(text.size()) + " bytes, limit " +
                           std::to_string(kMaxJobConfigBytes) + ": a config is a few keys)");
  }
  Result<toml::table> parsed = ParseTomlText(text, "");
  if (!parsed.ok()) return parsed.status();
  JobConfig cfg;
  bool have_batch_size = false, have_epochs = false;
  for (auto&& entry : parsed.value()) {
    const toml::key& k = entry.first;  // not a structured binding: lambdas capture these
    const toml::node& node = entry.second;
    const std::string key(k.str());
    const size_t line = TomlLine(k.source());
    auto bad = [&](const std::string& what) { return InvalidArgument(LineMsg(line, what)); };
    auto got = [&](const char* want) {
      return bad(key + " must be " + want + ", got " + TomlTypeName(node.type()));
    };
    auto int_in = [&](int64_t lo, int64_t hi, uint32_t* out) -> Status {
      const std::optional<int64_t> v = node.value_exact<int64_t>();
      if (!v) return got("an integer");
      if (*v < lo || *v > hi) {
        return bad(key + " = " + std::to_string(*v) + " is out of range (" + std::to_string(lo) +
                   ".." + std::to_string(hi) + ")");
      }
      *out = static_cast<uint32_t>(*v);
      return Status::Ok();
    };
    Status s;
    if (key == "batch_size") {
      s = int_in(1, kMaxBatchSize, &cfg.batch_size);
      have_batch_size = true;
    } else if (key == "epochs") {
      s = int_in(1, kMaxEpochs, &cfg.epochs);
      have_epochs = true;
    } else if (key == "loaders") {
      s = int_in(1, kMaxLoaders, &cfg.loaders);
    } else if (key == "root") {
      const std::optional<std::string_view> v = node.value_exact<std::string_view>();
      if (!v) return got("a string");
      Result<std::string> r = NormaliseRelativePath(*v, PathKind::kDirectory);
      if (!r.ok()) return bad("root: " + r.status().message());
      cfg.root = std::move(r).value();
    } else if (key == "compute_ms") {
      if (!node.is_number()) return got("a number (milliseconds)");
      const double ms = node.value<double>().value_or(-1);
      if (!std::isfinite(ms)) return bad("compute_ms must be finite");
      if (!(ms >= 0 && ms <= kMaxComputeMs)) {
        return bad("compute_ms must be between 0 and 1e9 milliseconds");
      }
      cfg.compute_ms = ms;
    } else {
      return bad(std::string(node.is_table() ? "unknown table " : "unknown key ") +
                 QuoteForMessage(key) + " (a config has top-level keys only: " +
                 std::string(kKnownKeys) + ")");
    }
    if (!s.ok()) return s;
  }
  if (!have_batch_size) return InvalidArgument("missing required key 'batch_size'");
  if (!have_epochs) return InvalidArgument("missing required key 'epochs'");
  return cfg;
}

std::string FormatJobConfig(const JobConfig& c) {
  // Written key by key (TOML++ would sort them); TOML++ quotes the string,
  // always as a "basic" string.
  std::ostringstream root;
  root << toml::toml_formatter(toml::value<std::string>(c.root), toml::format_flags::none);
  std::string out = "batch_size = " + std::to_string(c.batch_size) + "\n";
  out += "epochs = " + std::to_string(c.epochs) + "\n";
  out += "root = " + root.str() + "\n";
  out += "loaders = " + std::to_string(c.loaders) + "\n";
  if (c.compute_ms) {
    std::ostringstream ms;
    ms << toml::value<double>(*c.compute_ms);
    out += "compute_ms = " + ms.str() + "\n";
  }
  return out;
}

// One normalised relative file path per line (samples, spill_schedule): the
// line rules both files share. `what` names the list in messages.
static Result<PathList> ParsePathLines(std::string_view text, const char* what,
                                       const char* items) {
  if (Status s = TooLarge(text); !s.ok()) return s;
  if (text.empty()) return InvalidArgument(std::string("the ") + what + " is empty");
  PathList out;
  out.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1, text.size());
  Status st = ForEachLine(text, [&](size_t line, std::string_view l) -> Status {
    if (l.empty()) return InvalidArgument(LineMsg(line, "empty line"));
    if (l.size() > kMaxPathBytes) {
      return InvalidArgument(LineMsg(line, "path longer than " + std::to_string(kMaxPathBytes) +
                                               " bytes: " + QuoteForMessage(l)));
    }
    if (out.size() >= std::numeric_limits<uint32_t>::max() - 1) {
      return InvalidArgument(LineMsg(line, std::string("too many ") + items));
    }
    if (IsNormalFilePath(l)) {  // the common case: taken as it is
      out.push_back(l);
      return Status::Ok();
    }
    Result<std::string> r = NormaliseRelativePath(l, PathKind::kFile);
    if (!r.ok()) return InvalidArgument(LineMsg(line, r.status().message()));
    out.push_back(r.value());
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<PathList> ParseSampleList(std::string_view text) {
  auto parsed = ParsePathLines(text, "sample list", "samples");
  if (!parsed.ok()) return parsed.status();
  PathList out = std::move(parsed).value();
  // Duplicates, by sorting (hash, line) pairs: lists run to millions of
  // lines, and one sort costs less than a million-entry hash set. The line
  // reported is the earliest that repeats an earlier one.
  std::vector<std::pair<uint64_t, uint32_t>> keyed(out.size());
  for (size_t k = 0; k < out.size(); ++k) {
    keyed[k] = {Checksum(out[k].data(), out[k].size()), static_cast<uint32_t>(k)};
  }
  std::sort(keyed.begin(), keyed.end());
  size_t dup = SIZE_MAX, first = 0;
  for (size_t a = 0; a < keyed.size();) {
    size_t b = a + 1;
    while (b < keyed.size() && keyed[b].first == keyed[a].first) ++b;
    if (b - a > 1) {
      // Equal hashes: sort the run by (path, line), so that equal paths are
      // neighbours, each group's first line first (no pairwise compare: a
      // list crafted to collide costs a sort, not a square).
      std::sort(keyed.begin() + static_cast<std::ptrdiff_t>(a),
                keyed.begin() + static_cast<std::ptrdiff_t>(b),
                [&](const auto& x, const auto& y) {
                  const std::string_view px = out[x.second], py = out[y.second];
                  return px != py ? px < py : x.second < y.second;
                });
      size_t group = a;
      for (size_t i = a + 1; i < b; ++i) {
        if (out[keyed[i].second] != out[keyed[group].second]) {
          group = i;
        } else if (keyed[i].second < dup) {
          dup = keyed[i].second;
          first = keyed[group].second;
        }
      }
    }
    a = b;
  }
  if (dup != SIZE_MAX) {
    return InvalidArgument(LineMsg(dup + 1, "duplicate of line " + std::to_string(first + 1) +
                                                ": " + QuoteForMessage(out[dup])));
  }
  return out;
}

Result<std::vector<uint32_t>> ParseOrder(std::string_view text, size_t sample_count) {
  if (Status s = TooLarge(text); !s.ok()) return s;
  std::vector<uint32_t> order;
  std::vector<uint32_t> seen_at(sample_count, 0);  // token position (1-based) or 0
  size_t line = 1;
  uint64_t token = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (IsSpace(text[i])) {
      if (text[i] == '\n') ++line;
      ++i;
      continue;
    }
    size_t start = i;
    while (i < text.size() && !IsSpace(text[i])) ++i;
    std::string_view tok = text.substr(start, i - start);
    ++token;
    auto where = [&] {
      return "token " + std::to_string(token) + " (line " + std::to_string(line) + ") " +
             QuoteForMessage(tok, 24) + ": ";
    };
    bool digits = true;
    for (char c : tok) digits = digits && IsDigit(c);
    if (!digits) {
      bool negative = tok.size() > 1 && tok[0] == '-';
      for (size_t j = 1; negative && j < tok.size(); ++j) negative = IsDigit(tok[j]);
      return InvalidArgument(where() + (negative ? "negative index" : "not a decimal sample index"));
    }
    uint64_t v;
    if (tok.size() > 10 || !ParseU64(tok, &v) || v >= sample_count) {
      return InvalidArgument(where() + "index out of range (the sample list has " +
                             std::to_string(sample_count) + " samples)");
    }
    if (seen_at[v] != 0) {
      return InvalidArgument(where() + "index " + std::to_string(v) + " already listed as token " +
                             std::to_string(seen_at[v]));
    }
    seen_at[v] = static_cast<uint32_t>(token);
    order.push_back(static_cast<uint32_t>(v));
  }
  if (order.empty()) return InvalidArgument("the order lists no samples");
  return order;
}

Result<std::vector<std::string>> ParseSpillSchedule(std::string_view text) {
  Result<PathList> parsed = ParsePathLines(text, "spill schedule", "steps");
  if (!parsed.ok()) return parsed.status();
  return parsed.value().ToStrings();
}

namespace {

// The one token of `text` (blanks around it dropped), all digits.
Result<std::string_view> DigitsToken(std::string_view text) {
  size_t b = 0, e = text.size();
  while (b < e && IsSpace(text[b])) ++b;
  while (e > b && IsSpace(text[e - 1])) --e;
  std::string_view tok = text.substr(b, e - b);
  if (tok.empty()) return InvalidArgument("expected one integer, got nothing");
  for (char c : tok) {
    if (!IsDigit(c)) {
      return InvalidArgument("expected one non-negative integer, got " + QuoteForMessage(tok, 32));
    }
  }
  return tok;
}

}  // namespace

Result<uint64_t> ParseProgress(std::string_view text) {
  Result<std::string_view> digits = DigitsToken(text);
  if (!digits.ok()) return digits.status();
  const std::string_view tok = digits.value();
  uint64_t v;
  if (tok.size() > 10 || !ParseU64(tok, &v) || v >= std::numeric_limits<uint32_t>::max()) {
    return InvalidArgument(QuoteForMessage(tok, 32) + " is out of range");
  }
  return v;
}

Result<uint32_t> ParseEpochMarker(std::string_view text) {
  Result<std::string_view> digits = DigitsToken(text);
  if (!digits.ok()) return digits.status();
  const std::string_view tok = digits.value();
  uint64_t v;
  if (tok.size() > 10 || !ParseU64(tok, &v) || v >= kMaxEpochs) {
    return InvalidArgument(QuoteForMessage(tok, 32) + " is out of range (0.." +
                           std::to_string(kMaxEpochs - 1) + ")");
  }
  return static_cast<uint32_t>(v);
}

Result<PositionReport> ParsePosition(std::string_view text) {
  std::string_view tok[3];
  size_t n = 0, i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    const size_t b = i;
    while (i < text.size() && !IsSpace(text[i])) ++i;
    if (i == b) break;
    if (n == 3) break;
    tok[n++] = text.substr(b, i - b);
  }
  const std::string_view body = text.substr(0, std::min<size_t>(text.size(), 64));
  if (n != 2 || text.find('\n') < text.find_last_not_of(" \t\r\n")) {
    return InvalidArgument("expected \"EPOCH POSITION\" (two integers on one line), got " +
                           QuoteForMessage(body, 48));
  }
  Result<uint32_t> epoch = ParseEpochMarker(tok[0]);
  if (!epoch.ok()) return InvalidArgument("epoch: " + epoch.status().message());
  Result<uint64_t> position = ParseProgress(tok[1]);
  if (!position.ok()) return InvalidArgument("position: " + position.status().message());
  return PositionReport{epoch.value(), position.value()};
}

Result<uint32_t> ParseOrderFileName(std::string_view name) {
  uint64_t v;
  if (name.empty() || name.size() > 7 || !ParseU64(name, &v) ||
      (name.size() > 1 && name[0] == '0') || v >= kMaxEpochs) {
    return InvalidArgument("order file name " + QuoteForMessage(name, 32) +
                           " is not an epoch number (0.." + std::to_string(kMaxEpochs - 1) +
                           ", no leading zeros)");
  }
  return static_cast<uint32_t>(v);
}

Result<std::vector<pid_t>> ParsePidList(std::string_view text) {
  if (Status s = TooLarge(text); !s.ok()) return s;
  std::vector<pid_t> out;
  std::unordered_set<pid_t> seen;
  Status st = ForEachLine(text, [&](size_t line, std::string_view l) -> Status {
    size_t b = 0, e = l.size();
    while (b < e && (IsBlank(l[b]) || l[b] == '\r')) ++b;
    while (e > b && (IsBlank(l[e - 1]) || l[e - 1] == '\r')) --e;
    std::string_view tok = l.substr(b, e - b);
    if (tok.empty()) return InvalidArgument(LineMsg(line, "empty line (expected a pid)"));
    uint64_t v;
    bool digits = true;
    for (char c : tok) digits = digits && IsDigit(c);
    if (!digits) {
      return InvalidArgument(LineMsg(line, "expected a positive pid, got " + QuoteForMessage(tok, 32)));
    }
    if (tok.size() > 10 || !ParseU64(tok, &v) || v < 1 || v > static_cast<uint64_t>(kMaxPid)) {
      return InvalidArgument(LineMsg(line, "pid " + QuoteForMessage(tok, 32) + " is out of range (1.." +
                                               std::to_string(kMaxPid) + ")"));
    }
    if (seen.insert(static_cast<pid_t>(v)).second) out.push_back(static_cast<pid_t>(v));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace epochfs::control
