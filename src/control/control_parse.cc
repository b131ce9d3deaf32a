#include "epochfs/control/control_parse.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

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

// ---- config (TOML subset) ----

enum class ValueType { kInteger, kFloat, kString, kBool };

const char* TypeName(ValueType t) {
  switch (t) {
    case ValueType::kInteger: return "an integer";
    case ValueType::kFloat: return "a float";
    case ValueType::kString: return "a string";
    case ValueType::kBool: return "a boolean";
  }
  return "a value";
}

struct Value {
  ValueType type = ValueType::kInteger;
  int64_t integer = 0;
  double number = 0;
  std::string str;
};

bool IsBareKeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || IsDigit(c) || c == '_' || c == '-';
}

// Parses a basic string starting after the opening quote; *i ends after the
// closing quote.
Status ParseBasicString(std::string_view l, size_t* i, std::string* out) {
  while (*i < l.size()) {
    char c = l[(*i)++];
    if (c == '"') return Status::Ok();
    if (c == '\\') {
      if (*i >= l.size()) break;
      char e = l[(*i)++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case 't': out->push_back('\t'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'u':
        case 'U':
          return InvalidArgument("unicode escapes are not supported; write the character itself");
        default:
          return InvalidArgument("unknown escape \\" + std::string(QuoteForMessage({&e, 1}, 4)));
      }
      continue;
    }
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
      return InvalidArgument("control character in string");
    }
    out->push_back(c);
  }
  return InvalidArgument("unterminated string");
}

// TOML decimal integer: [+-]?(0|[1-9](_?[0-9])*).
bool ParseTomlInt(std::string_view tok, int64_t* out) {
  bool neg = false;
  if (!tok.empty() && (tok[0] == '+' || tok[0] == '-')) {
    neg = tok[0] == '-';
    tok.remove_prefix(1);
  }
  if (tok.empty() || !IsDigit(tok[0])) return false;
  if (tok[0] == '0' && tok.size() > 1) return false;
  std::string digits;
  for (size_t i = 0; i < tok.size(); ++i) {
    if (tok[i] == '_') {
      if (i + 1 >= tok.size() || !IsDigit(tok[i + 1]) || !IsDigit(tok[i - 1])) return false;
      continue;
    }
    if (!IsDigit(tok[i])) return false;
    digits.push_back(tok[i]);
  }
  uint64_t v;
  if (!ParseU64(digits, &v) || v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return false;
  }
  *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

// TOML float: integer part, then a fraction and/or an exponent.
bool ParseTomlFloat(std::string_view tok, double* out) {
  std::string s;
  for (size_t i = 0; i < tok.size(); ++i) {
    char c = tok[i];
    if (c == '_') {
      if (i == 0 || i + 1 >= tok.size() || !IsDigit(tok[i - 1]) || !IsDigit(tok[i + 1])) return false;
      continue;
    }
    if (!IsDigit(c) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') return false;
    s.push_back(c);
  }
  // Structure check: [+-]? int ( . digits )? ( [eE] [+-]? digits )?, with at
  // least one of fraction / exponent.
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t int_start = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  if (i == int_start) return false;
  if (s[int_start] == '0' && i - int_start > 1) return false;
  bool frac = false, exp = false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t f = i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    if (i == f) return false;
    frac = true;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t e = i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    if (i == e) return false;
    exp = true;
  }
  if (i != s.size() || (!frac && !exp)) return false;
  const char* b = s.data();
  if (*b == '+') ++b;
  auto [p, ec] = std::from_chars(b, s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(*out);
}

// Parses the value at l[*i...]; *i ends after the value.
Status ParseValue(std::string_view l, size_t* i, Value* v) {
  if (*i >= l.size() || l[*i] == '#') return InvalidArgument("missing value after '='");
  char c = l[*i];
  if (c == '"') {
    if (l.substr(*i, 3) == "\"\"\"") return InvalidArgument("multi-line strings are not supported");
    ++*i;
    v->type = ValueType::kString;
    return ParseBasicString(l, i, &v->str);
  }
  if (c == '\'') {
    if (l.substr(*i, 3) == "'''") return InvalidArgument("multi-line strings are not supported");
    size_t end = l.find('\'', *i + 1);
    if (end == std::string_view::npos) return InvalidArgument("unterminated string");
    v->type = ValueType::kString;
    v->str = std::string(l.substr(*i + 1, end - *i - 1));
    for (char ch : v->str) {
      if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f) {
        return InvalidArgument("control character in string");
      }
    }
    *i = end + 1;
    return Status::Ok();
  }
  if (c == '[') return InvalidArgument("arrays are not supported");
  if (c == '{') return InvalidArgument("inline tables are not supported");
  size_t start = *i;
  while (*i < l.size() && !IsBlank(l[*i]) && l[*i] != '#') ++*i;
  std::string_view tok = l.substr(start, *i - start);
  if (tok == "true" || tok == "false") {
    v->type = ValueType::kBool;
    return Status::Ok();
  }
  if (tok.size() > 1 && tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'o' || tok[1] == 'b')) {
    return InvalidArgument("only decimal integers are supported, got " + QuoteForMessage(tok));
  }
  if (tok == "inf" || tok == "+inf" || tok == "-inf" || tok == "nan" || tok == "+nan" ||
      tok == "-nan") {
    return InvalidArgument("value must be finite, got " + QuoteForMessage(tok));
  }
  if (ParseTomlInt(tok, &v->integer)) {
    v->type = ValueType::kInteger;
    return Status::Ok();
  }
  if (ParseTomlFloat(tok, &v->number)) {
    v->type = ValueType::kFloat;
    return Status::Ok();
  }
  return InvalidArgument("cannot parse value " + QuoteForMessage(tok) +
                         " (expected an integer, a float or a quoted string)");
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
  if (Status s = TooLarge(text); !s.ok()) return s;
  JobConfig cfg;
  std::unordered_map<std::string, size_t> seen;  // key → line
  Status st = ForEachLine(text, [&](size_t line, std::string_view l) -> Status {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.find('\0') != std::string_view::npos) return InvalidArgument(LineMsg(line, "NUL byte"));
    size_t i = 0;
    while (i < l.size() && IsBlank(l[i])) ++i;
    if (i == l.size() || l[i] == '#') return Status::Ok();
    if (l[i] == '[') {
      return InvalidArgument(LineMsg(line, "tables are not supported; write top-level keys only"));
    }
    size_t ks = i;
    while (i < l.size() && IsBareKeyChar(l[i])) ++i;
    std::string key(l.substr(ks, i - ks));
    if (key.empty()) {
      return InvalidArgument(LineMsg(line, "expected `key = value`, got " + QuoteForMessage(l)));
    }
    while (i < l.size() && IsBlank(l[i])) ++i;
    if (i < l.size() && l[i] == '.') {
      return InvalidArgument(LineMsg(line, "dotted keys are not supported (" +
                                               QuoteForMessage(l.substr(ks)) + ")"));
    }
    if (i >= l.size() || l[i] != '=') {
      return InvalidArgument(LineMsg(line, "expected '=' after key '" + key + "'"));
    }
    ++i;
    while (i < l.size() && IsBlank(l[i])) ++i;
    Value v;
    if (Status s = ParseValue(l, &i, &v); !s.ok()) {
      return InvalidArgument(LineMsg(line, key + ": " + s.message()));
    }
    while (i < l.size() && IsBlank(l[i])) ++i;
    if (i < l.size() && l[i] != '#') {
      return InvalidArgument(
          LineMsg(line, key + ": unexpected text after the value: " + QuoteForMessage(l.substr(i))));
    }
    if (auto it = seen.find(key); it != seen.end()) {
      return InvalidArgument(
          LineMsg(line, "key '" + key + "' already set on line " + std::to_string(it->second)));
    }
    auto want = [&](ValueType t) -> Status {
      if (v.type == t) return Status::Ok();
      return InvalidArgument(
          LineMsg(line, key + " must be " + TypeName(t) + ", got " + TypeName(v.type)));
    };
    auto int_in = [&](int64_t lo, int64_t hi, uint32_t* out) -> Status {
      if (Status s = want(ValueType::kInteger); !s.ok()) return s;
      if (v.integer < lo || v.integer > hi) {
        return InvalidArgument(LineMsg(line, key + " = " + std::to_string(v.integer) +
                                                 " is out of range (" + std::to_string(lo) + ".." +
                                                 std::to_string(hi) + ")"));
      }
      *out = static_cast<uint32_t>(v.integer);
      return Status::Ok();
    };
    Status s;
    if (key == "batch_size") {
      s = int_in(1, kMaxBatchSize, &cfg.batch_size);
    } else if (key == "epochs") {
      s = int_in(1, kMaxEpochs, &cfg.epochs);
    } else if (key == "loaders") {
      s = int_in(1, kMaxLoaders, &cfg.loaders);
    } else if (key == "root") {
      s = want(ValueType::kString);
      if (s.ok()) {
        Result<std::string> r = NormaliseRelativePath(v.str, PathKind::kDirectory);
        if (!r.ok()) return InvalidArgument(LineMsg(line, "root: " + r.status().message()));
        cfg.root = std::move(r).value();
      }
    } else if (key == "compute_ms") {
      double ms = 0;
      if (v.type == ValueType::kInteger) {
        ms = static_cast<double>(v.integer);
      } else if (v.type == ValueType::kFloat) {
        ms = v.number;
      } else {
        return InvalidArgument(
            LineMsg(line, "compute_ms must be a number (milliseconds), got " + std::string(TypeName(v.type))));
      }
      if (!(ms >= 0 && ms <= kMaxComputeMs)) {
        return InvalidArgument(LineMsg(line, "compute_ms must be between 0 and 1e9 milliseconds"));
      }
      cfg.compute_ms = ms;
    } else {
      return InvalidArgument(LineMsg(line, "unknown key '" + key + "' (known keys: " +
                                               std::string(kKnownKeys) + ")"));
    }
    if (!s.ok()) return s;
    seen.emplace(key, line);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  for (const char* required : {"batch_size", "epochs"}) {
    if (!seen.count(required)) {
      return InvalidArgument(std::string("missing required key '") + required + "'");
    }
  }
  return cfg;
}

// One normalised relative file path per line (samples, spill_schedule): the
// line rules both files share. `what` names the list in messages.
static Result<std::vector<std::string>> ParsePathLines(std::string_view text, const char* what,
                                                const char* items) {
  if (Status s = TooLarge(text); !s.ok()) return s;
  if (text.empty()) return InvalidArgument(std::string("the ") + what + " is empty");
  std::vector<std::string> out;
  Status st = ForEachLine(text, [&](size_t line, std::string_view l) -> Status {
    if (l.empty()) return InvalidArgument(LineMsg(line, "empty line"));
    if (l.size() > kMaxPathBytes) {
      return InvalidArgument(LineMsg(line, "path longer than " + std::to_string(kMaxPathBytes) +
                                               " bytes: " + QuoteForMessage(l)));
    }
    Result<std::string> r = NormaliseRelativePath(l, PathKind::kFile);
    if (!r.ok()) return InvalidArgument(LineMsg(line, r.status().message()));
    if (out.size() >= std::numeric_limits<uint32_t>::max() - 1) {
      return InvalidArgument(LineMsg(line, std::string("too many ") + items));
    }
    out.push_back(std::move(r).value());
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<std::string>> ParseSampleList(std::string_view text) {
  auto parsed = ParsePathLines(text, "sample list", "samples");
  if (!parsed.ok()) return parsed.status();
  std::vector<std::string> out = std::move(parsed).value();
  // Duplicates: built after the vector stops moving so the views stay valid.
  std::unordered_map<std::string_view, size_t> first;
  first.reserve(out.size());
  for (size_t k = 0; k < out.size(); ++k) {
    auto [it, inserted] = first.emplace(out[k], k);
    if (!inserted) {
      return InvalidArgument(LineMsg(k + 1, "duplicate of line " + std::to_string(it->second + 1) +
                                                ": " + QuoteForMessage(out[k])));
    }
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
  return ParsePathLines(text, "spill schedule", "steps");
}

Result<uint64_t> ParseProgress(std::string_view text) {
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
  uint64_t v;
  if (tok.size() > 10 || !ParseU64(tok, &v) || v >= std::numeric_limits<uint32_t>::max()) {
    return InvalidArgument(QuoteForMessage(tok, 32) + " is out of range");
  }
  return v;
}

Result<uint32_t> ParseEpochMarker(std::string_view text) {
  size_t b = 0, e = text.size();
  while (b < e && IsSpace(text[b])) ++b;
  while (e > b && IsSpace(text[e - 1])) --e;
  std::string_view tok = text.substr(b, e - b);
  if (tok.empty()) return InvalidArgument("expected one integer, got nothing");
  for (char c : tok) {
    if (!IsDigit(c)) {
      return InvalidArgument("expected one non-negative integer, got " +
                             QuoteForMessage(tok, 32));
    }
  }
  uint64_t v;
  if (tok.size() > 10 || !ParseU64(tok, &v) || v >= kMaxEpochs) {
    return InvalidArgument(QuoteForMessage(tok, 32) + " is out of range (0.." +
                           std::to_string(kMaxEpochs - 1) + ")");
  }
  return static_cast<uint32_t>(v);
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
