#include "epochfs/common/toml_depth.h"

#include <vector>

namespace epochfs {
namespace {

bool IsBareKeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// One pass over the text; see the header for what is counted.
class DepthScanner {
 public:
  DepthScanner(std::string_view text, size_t limit) : t_(text), limit_(limit) {}

  TomlDepthResult Run() {
    size_t table_depth = 0;  // the parts of the current [header] ([[header]]: one more)
    while (!stop_ && i_ < t_.size()) {
      SkipBlank(/*newlines=*/true);
      if (i_ >= t_.size()) break;
      if (t_[i_] == '[') {
        ++i_;
        const bool array_of_tables = i_ < t_.size() && t_[i_] == '[';
        if (array_of_tables) ++i_;
        table_depth = KeyParts(0) + (array_of_tables ? 1 : 0);
        Check(table_depth);
      } else {
        const size_t parts = KeyParts(table_depth);
        SkipBlank(false);
        if (parts > 0 && i_ < t_.size() && t_[i_] == '=') {
          ++i_;
          Value(table_depth + parts);
        }
      }
      SkipToLineEnd();  // the rest of the line is the parser's to judge
    }
    return result_;
  }

 private:
  struct Frame {
    bool table;    // an inline table; else an array
    size_t depth;  // arrays: their elements' depth; tables: their own depth
  };

  void Check(size_t depth) {
    if (stop_) return;
    if (depth > result_.depth) result_.depth = depth;
    if (depth <= limit_) return;
    stop_ = true;
    result_.line = 1;
    size_t line_start = 0;
    for (size_t j = 0; j < i_ && j < t_.size(); ++j) {
      if (t_[j] == '\n') ++result_.line, line_start = j + 1;
    }
    result_.column = i_ - line_start + 1;
  }

  // Spaces and tabs; with `newlines`, also line ends and comments.
  void SkipBlank(bool newlines) {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == ' ' || c == '\t') {
        ++i_;
      } else if (newlines && (c == '\n' || c == '\r')) {
        ++i_;
      } else if (newlines && c == '#') {
        SkipToLineEnd();
      } else {
        break;
      }
    }
  }

  void SkipToLineEnd() {
    while (i_ < t_.size() && t_[i_] != '\n') {
      if (t_[i_] == '"' || t_[i_] == '\'') {
        String();  // a multi-line string may hold what looks like a line end
      } else {
        ++i_;
      }
    }
  }

  // A string starting at t_[i_] (a quote): basic or literal, one line or many.
  void String() {
    const char q = t_[i_];
    const bool multi = t_.substr(i_, 3) == std::string_view(q == '"' ? "\"\"\"" : "'''");
    i_ += multi ? 3 : 1;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (q == '"' && c == '\\') {
        i_ += 2;
      } else if (c == q && (!multi || t_.substr(i_, 3) == std::string_view(q == '"' ? "\"\"\"" : "'''"))) {
        i_ += multi ? 3 : 1;
        while (multi && i_ < t_.size() && t_[i_] == q) ++i_;  // up to two quotes of content
        return;
      } else if (!multi && c == '\n') {
        return;  // unterminated: the parser reports it
      } else {
        ++i_;
      }
    }
  }

  // The parts of a (dotted) key at t_[i_]; each counted as it is read so
  // that a key of thousands of parts stops at the limit. 0: no key here.
  size_t KeyParts(size_t base) {
    size_t parts = 0;
    while (!stop_ && i_ < t_.size()) {
      SkipBlank(false);
      if (i_ >= t_.size()) break;
      const char c = t_[i_];
      if (c == '"' || c == '\'') {
        String();
      } else if (IsBareKeyChar(c)) {
        while (i_ < t_.size() && IsBareKeyChar(t_[i_])) ++i_;
      } else {
        break;
      }
      Check(base + ++parts);
      SkipBlank(false);
      if (i_ < t_.size() && t_[i_] == '.') {
        ++i_;
      } else {
        break;
      }
    }
    return parts;
  }

  // A value at depth `depth` (arrays and inline tables open further levels).
  void Value(size_t depth) {
    std::vector<Frame> open;  // at most `limit_` deep: each level adds one
    enum class Next { kValue, kAfterValue, kKey } next = Next::kValue;
    size_t value_depth = depth;
    while (!stop_ && i_ < t_.size()) {
      const bool in_array = !open.empty() && !open.back().table;
      if (next == Next::kValue) {
        SkipBlank(in_array);
        if (i_ >= t_.size()) return;
        const char c = t_[i_];
        if (c == '"' || c == '\'') {
          String();
          next = Next::kAfterValue;
        } else if (c == '[') {
          ++i_;
          Check(value_depth + 1);
          open.push_back({false, value_depth + 1});
          value_depth += 1;
        } else if (c == '{') {
          ++i_;
          open.push_back({true, value_depth});
          next = Next::kKey;
        } else if (c == ']' && in_array) {
          ++i_;  // an empty array, or a trailing comma
          open.pop_back();
          next = Next::kAfterValue;
        } else {
          const size_t start = i_;
          while (i_ < t_.size() && std::string_view(",]}#\n\r \t").find(t_[i_]) == std::string_view::npos) ++i_;
          if (i_ == start) return;  // not a value: the parser's to judge
          next = Next::kAfterValue;
        }
      } else if (next == Next::kAfterValue) {
        if (open.empty()) return;
        SkipBlank(in_array);
        if (i_ >= t_.size()) return;
        const char c = t_[i_];
        if (c == ',') {
          ++i_;
          if (in_array) {
            value_depth = open.back().depth;
            next = Next::kValue;
          } else {
            next = Next::kKey;
          }
        } else if ((c == ']' && in_array) || (c == '}' && !in_array)) {
          ++i_;
          open.pop_back();
        } else {
          return;
        }
      } else {  // a key inside an inline table
        SkipBlank(false);
        if (i_ < t_.size() && t_[i_] == '}') {
          ++i_;
          open.pop_back();
          next = Next::kAfterValue;
          continue;
        }
        const size_t parts = KeyParts(open.back().depth);
        SkipBlank(false);
        if (parts == 0 || i_ >= t_.size() || t_[i_] != '=') return;
        ++i_;
        value_depth = open.back().depth + parts;
        next = Next::kValue;
      }
    }
  }

  std::string_view t_;
  size_t limit_;
  size_t i_ = 0;
  bool stop_ = false;
  TomlDepthResult result_;
};

}  // namespace

TomlDepthResult MeasureTomlDepth(std::string_view text, size_t limit) {
  return DepthScanner(text, limit).Run();
}

}  // namespace epochfs
