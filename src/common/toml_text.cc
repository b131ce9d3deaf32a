#include "epochfs/common/toml_text.h"

#include "epochfs/common/message_text.h"
#include "epochfs/common/toml_depth.h"

namespace epochfs {

namespace {

std::string Where(const std::string& origin, size_t line, size_t column) {
  return origin.empty()
      ? "line " + std::to_string(line) + ", column " + std::to_string(column)
      : origin + ":" + std::to_string(line) + ":" + std::to_string(column);
}

}  // namespace

Result<toml::table> ParseTomlText(std::string_view text, const std::string& origin) {
  // TOML++ recurses once per level of the tree: bound the depth first.
  const TomlDepthResult depth = MeasureTomlDepth(text);
  if (depth.line != 0) {
    return InvalidArgument(Where(origin, depth.line, depth.column) +
                           ": TOML syntax error: keys and values nested deeper than " +
                           std::to_string(kMaxTomlDepth) + " levels");
  }
  try {
    return toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    const toml::source_position& pos = e.source().begin;
    return InvalidArgument(Where(origin, pos.line, pos.column) + ": TOML syntax error: " + std::string(e.description()));
  }
}

const char* TomlTypeName(toml::node_type type) {
  switch (type) {
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::string: return "a string";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "a value";
}

std::string TomlValueText(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::integer:
      return std::to_string(n.as_integer()->get());
    case toml::node_type::floating_point:
      return DoubleText(n.as_floating_point()->get());
    case toml::node_type::boolean:
      return n.as_boolean()->get() ? "true" : "false";
    case toml::node_type::string:
      return QuoteText(n.as_string()->get());
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    default:
      return "a date/time";
  }
}

void AddTomlProblem(ProblemList& problems, const std::string& origin, const toml::node& at,
                    const std::string& what) {
  const toml::source_position& pos = at.source().begin;
  std::string where = origin;
  if (pos.line > 0) where += ":" + std::to_string(pos.line);
  problems.Add(pos.line, pos.column, where + ": " + what);
}

}  // namespace epochfs
