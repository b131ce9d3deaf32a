// The depth bound in front of TOML++ (common/toml_depth.h): deep keys, headers
// and nested values are refused with a syntax error naming their line, before
// the library's recursion could exhaust a stack; strings, comments and
// ordinary values are not mistaken for depth.
#include <gtest/gtest.h>

#include <string>

#include "epochfs/common/toml_depth.h"
#include "epochfs/common/toml_text.h"

namespace epochfs {
namespace toml_depth_test_cases {

std::string Dotted(size_t parts) {
  std::string key = "a";
  for (size_t i = 1; i < parts; ++i) key += ".a";
  return key;
}

std::string Repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

void ExpectTooDeep(const std::string& text, size_t line) {
  Result<toml::table> r = ParseTomlText(text, "in.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("in.toml:" + std::to_string(line) + ":"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("nested deeper than 64 levels"), std::string::npos)
      << r.status().message();
}

TEST(TomlDepth, DottedKeysAtTheLimitParseAndPastItAreRefused) {
  EXPECT_TRUE(ParseTomlText(Dotted(64) + " = 1\n", "").ok());
  ExpectTooDeep(Dotted(65) + " = 1\n", 1);
  // Far past it: the text that ended the daemon (a thread's stack) before.
  ExpectTooDeep("x = 1\n" + Dotted(100000) + " = 1\n", 2);
  ExpectTooDeep("\"q\".'r'." + Dotted(70) + " = 1\n", 1);
}

TEST(TomlDepth, HeadersAndKeysUnderThemAddUp) {
  EXPECT_TRUE(ParseTomlText("[" + Dotted(60) + "]\n" + Dotted(4) + " = 1\n", "").ok());
  ExpectTooDeep("[" + Dotted(60) + "]\n" + Dotted(5) + " = 1\n", 2);
  ExpectTooDeep("[" + Dotted(100000) + "]\nx = 1\n", 1);
  ExpectTooDeep("[[" + Dotted(64) + "]]\nx = 1\n", 1);
  // A later, shallower header starts again from its own depth.
  EXPECT_TRUE(ParseTomlText("[" + Dotted(60) + "]\nb = 1\n[c]\n" + Dotted(60) + " = 1\n", "").ok());
}

TEST(TomlDepth, ArraysAndInlineTablesCountTheirLevels) {
  EXPECT_TRUE(ParseTomlText("x = " + Repeat("[", 63) + "1" + Repeat("]", 63) + "\n", "").ok());
  ExpectTooDeep("x = " + Repeat("[", 64) + "1" + Repeat("]", 64) + "\n", 1);
  // Inline tables whose keys are dotted: each level adds its key's parts.
  ExpectTooDeep("x = " + Repeat("{" + Dotted(10) + " = ", 7) + "1" + Repeat("}", 7) + "\n", 1);
  EXPECT_TRUE(ParseTomlText("x = " + Repeat("{" + Dotted(10) + " = ", 6) + "1" + Repeat("}", 6) + "\n", "").ok());
  // Elements after a nested array are measured from the array's own level.
  EXPECT_TRUE(ParseTomlText("x = [[1, 2], [3], {a = 1}, \"s\"]\ny = [\n  1, # c\n  2,\n]\n", "").ok());
  ExpectTooDeep("x = [\n1,\n[{" + Dotted(70) + " = 1}]\n]\n", 3);
}

TEST(TomlDepth, StringsCommentsAndValuesAreNotDepth) {
  const std::string deep = Dotted(1000);
  std::string text = "a = \"" + deep + "[[[{{{\"\n";
  text += "b = '" + deep + "'\n";
  text += "c = \"\"\"\n" + deep + " = 1\n[" + deep + "]\n\"\"\"\n";
  text += "d = '''\n" + deep + " = '' \n'''\n";
  text += "# " + deep + " = 1\n";
  text += "e = 1.5\nf = 1979-05-27T07:32:00.999\ng = [1.5, 2.5, 3.25]\n";
  text += "h = \"esc \\\" " + deep + "\"\n";
  Result<toml::table> r = ParseTomlText(text, "");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().at_path("e").value<double>(), 1.5);
  EXPECT_LE(MeasureTomlDepth(text).depth, 2u);
}

TEST(TomlDepth, BrokenTextIsLeftToTheParser) {
  for (const std::string text : {"= 1\n", "[a.\n", "a = \"open\n", "x = [1, \n", "x = {a = }\n",
                                  "a..b = 1\n", "]]]\n", "x = '''never closed\n"}) {
    EXPECT_EQ(MeasureTomlDepth(text).line, 0u) << text;
    Result<toml::table> r = ParseTomlText(text, "");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find("TOML syntax error"), std::string::npos);
  }
}

}  // namespace toml_depth_test_cases
}  // namespace epochfs
