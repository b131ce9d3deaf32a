// TomlDepth: how deep the tree that a TOML text describes nests, measured on
// the text before any parser sees it.
//
// Why: TOML++ builds and walks its tree recursively. Its own limit counts
// nested arrays and inline tables (256), not the tables a dotted key or a
// table header opens: `a.a.a. ... .a = 1` with 30,000 parts (60 KB) exhausts a
// thread's stack inside the library. Every TOML input of epochfs (a job's
// config through the mount, the mount config, plan models, sim workloads) is
// measured here first and refused past kMaxTomlDepth.
//
// What is counted: the depth of every value in the tree, i.e. the parts of
// the table header it sits under, plus the parts of each dotted key on the way
// to it, plus one per array or inline table that encloses it. Strings
// (basic, literal, multi-line) and comments are skipped; a text that is not
// valid TOML is measured as far as it can be and left to the parser's error.
// Cost: one pass, O(1) state besides a stack bounded by the limit.
// Thread safety: none needed (pure function).
#pragma once

#include <cstddef>
#include <string_view>

namespace epochfs {

// Deeper than any TOML file epochfs reads needs (its deepest keys are 3 levels).
inline constexpr size_t kMaxTomlDepth = 64;

struct TomlDepthResult {
  size_t depth = 0;  // the deepest value seen, counted until `limit` is passed
  size_t line = 0;   // 1-based line where the limit was passed (0: within it)
  size_t column = 0;
};

// Measures `text`; stops at the first place deeper than `limit`.
TomlDepthResult MeasureTomlDepth(std::string_view text, size_t limit = kMaxTomlDepth);

}  // namespace epochfs
