#include "epochfs/common/toml_text.h"

namespace epochfs {

Result<toml::table> ParseTomlText(std::string_view text, const std::string& origin) {
  try {
    return toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    const toml::source_position& pos = e.source().begin;
    const std::string at = origin.empty()
        ? "line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column)
        : origin + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column);
    return InvalidArgument(at + ": TOML syntax error: " + std::string(e.description()));
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

}  // namespace epochfs
