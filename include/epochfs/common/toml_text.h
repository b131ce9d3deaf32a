// ParseTomlText: TOML text to a toml::table with TOML++, the one place that
// turns TOML++'s parse_error (it is built with exceptions) into a Status.
//
// A syntax error (invalid TOML, invalid UTF-8, a key set twice, a tree nested
// deeper than kMaxTomlDepth: common/toml_depth.h) is InvalidArgument
//   "ORIGIN:LINE:COLUMN: TOML syntax error: WHAT"  (origin given), or
//   "line LINE, column COLUMN: TOML syntax error: WHAT"  (origin "").
// Cost: linear in the text; the caller bounds the text's size when it is
// untrusted. Thread safety: none needed (no shared state).
// toml++ is a large header: include this only where a TOML file is read.
#pragma once

#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "epochfs/common/problem_list.h"
#include "epochfs/common/status.h"

namespace epochfs {

Result<toml::table> ParseTomlText(std::string_view text, const std::string& origin);

// The line a key or value was read from (0 when unknown).
inline size_t TomlLine(const toml::source_region& where) { return where.begin.line; }

// "an integer", "a string", ... for messages.
const char* TomlTypeName(toml::node_type type);

// A value as an error message shows what it got: "12", "0.5", "true", a
// string quoted by QuoteText, or "a table", "an array", "a date/time".
std::string TomlValueText(const toml::node& n);

// Adds "ORIGIN:LINE: WHAT" to `problems` at the node's position ("ORIGIN:
// WHAT" when the node has none).
void AddTomlProblem(ProblemList& problems, const std::string& origin, const toml::node& at,
                    const std::string& what);

}  // namespace epochfs
