#include "epochfs/control/control_parse.h"

#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace epochfs::control {
namespace {


template <class T>
std::string Err(const Result<T>& r) {
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  return r.status().message();
}

// ---- paths ----

TEST(NormaliseRelativePath, NormalisesDotsAndSlashes) {
  EXPECT_EQ(NormaliseRelativePath("./a//b/./c.jpg", PathKind::kFile).value(), "a/b/c.jpg");
  EXPECT_EQ(NormaliseRelativePath("train/", PathKind::kDirectory).value(), "train");
  EXPECT_EQ(NormaliseRelativePath("", PathKind::kDirectory).value(), "");
  EXPECT_EQ(NormaliseRelativePath(".", PathKind::kDirectory).value(), "");
  EXPECT_EQ(NormaliseRelativePath("a..b/..c", PathKind::kFile).value(), "a..b/..c");
}

TEST(NormaliseRelativePath, RejectsHostilePaths) {
  EXPECT_CONTAINS(Err(NormaliseRelativePath("/etc/passwd", PathKind::kFile)), "absolute");
  EXPECT_CONTAINS(Err(NormaliseRelativePath("a/../../b", PathKind::kFile)), "'..'");
  EXPECT_CONTAINS(Err(NormaliseRelativePath("..", PathKind::kDirectory)), "'..'");
  EXPECT_CONTAINS(Err(NormaliseRelativePath(std::string("a\0b", 3), PathKind::kFile)), "NUL");
  EXPECT_CONTAINS(Err(NormaliseRelativePath("a\r", PathKind::kFile)), "carriage return");
  EXPECT_CONTAINS(Err(NormaliseRelativePath("dir/", PathKind::kFile)), "directory");
  EXPECT_CONTAINS(Err(NormaliseRelativePath("", PathKind::kFile)), "empty");
  EXPECT_CONTAINS(Err(NormaliseRelativePath("./.", PathKind::kFile)), "names no file");
  EXPECT_CONTAINS(Err(NormaliseRelativePath(std::string(5000, 'a'), PathKind::kFile)), "longer than 4096");
}

TEST(QuoteForMessage, EscapesAndTruncates) {
  EXPECT_EQ(QuoteForMessage("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(QuoteForMessage(std::string("\x01\xff", 2)), "\"\\x01\\xff\"");
  EXPECT_EQ(QuoteForMessage("abcdef", 3), "\"abc\"...");
}

// ---- config ----

TEST(ParseJobConfig, FullConfig) {
  auto r = ParseJobConfig(
      "# a job\n"
      "batch_size = 256\n"
      "epochs=90   # comment\n"
      "\troot = \"imagenet/train/\"\r\n"
      "loaders = 8\n"
      "compute_ms = 12.5\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().batch_size, 256u);
  EXPECT_EQ(r.value().epochs, 90u);
  EXPECT_EQ(r.value().root, "imagenet/train");
  EXPECT_EQ(r.value().loaders, 8u);
  ASSERT_TRUE(r.value().compute_ms.has_value());
  EXPECT_DOUBLE_EQ(*r.value().compute_ms, 12.5);
}

TEST(ParseJobConfig, DefaultsAndTomlForms) {
  auto r = ParseJobConfig("batch_size = 1_024\nepochs = +3\nroot = 'lit\\eral'\ncompute_ms = 0\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().batch_size, 1024u);
  EXPECT_EQ(r.value().epochs, 3u);
  EXPECT_EQ(r.value().root, "lit\\eral");
  EXPECT_EQ(r.value().loaders, 1u);
  EXPECT_DOUBLE_EQ(*r.value().compute_ms, 0.0);
  auto d = ParseJobConfig("batch_size = 1\nepochs = 1");  // no trailing newline
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.value().root, "");
  EXPECT_FALSE(d.value().compute_ms.has_value());
  EXPECT_DOUBLE_EQ(*ParseJobConfig("batch_size=1\nepochs=1\ncompute_ms=1e3\n").value().compute_ms,
                   1000.0);
}

TEST(ParseJobConfig, ErrorsNameKeyAndLine) {
  EXPECT_EQ(Err(ParseJobConfig("batch_size = 32\nepochs = 1\nfoo = 1\n")),
            "line 3: unknown key \"foo\" (a config has top-level keys only: batch_size, epochs, root, loaders, "
            "compute_ms)");
  EXPECT_EQ(Err(ParseJobConfig("batch_size = \"32\"\n")),
            "line 1: batch_size must be an integer, got a string");
  EXPECT_EQ(Err(ParseJobConfig("epochs = 1\nbatch_size = 0\n")),
            "line 2: batch_size = 0 is out of range (1..1000000)");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size = 1000001\n")), "out of range");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size = 99999999999999999999999\n")),
                  "line 1, column 37: TOML syntax error: Error while parsing decimal integer");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size = -1\n")), "out of range");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size=1\nepochs=0\n")), "line 2: epochs = 0");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size=1\nepochs=2\nloaders=1025\n")), "line 3: loaders = 1025 is out of range (1..1024)");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size=1\nepochs=2\nroot=\"/abs\"\n")), "line 3: root: absolute path");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size=1\nepochs=2\nroot=\"a/../..\"\n")), "line 3: root: '..'");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size=1\nepochs=2\nroot=3\n")), "line 3: root must be a string, got an integer");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size=1\nepochs=2\ncompute_ms=-1\n")), "line 3: compute_ms must be between 0");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size=1\nepochs=2\ncompute_ms=nan\n")), "finite");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size=1\nepochs=2\ncompute_ms=inf\n")), "finite");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size=1\nepochs=2\ncompute_ms=\"5\"\n")), "line 3: compute_ms must be a number (milliseconds), got a string");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size = 1\nbatch_size = 2\n")), "line 2, column 14: TOML syntax error: Error while parsing key-value pair: cannot redefine");
  EXPECT_EQ(Err(ParseJobConfig("batch_size = 1\n")), "missing required key 'epochs'");
  EXPECT_EQ(Err(ParseJobConfig("")), "missing required key 'batch_size'");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size=1\nepochs=1\n[job]\n")), "line 3: unknown table \"job\"");
  EXPECT_CONTAINS(Err(ParseJobConfig("job.batch_size = 1\n")), "line 1: unknown table \"job\"");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size 1\n")), "line 1, column 12: TOML syntax error");
  EXPECT_CONTAINS(Err(ParseJobConfig("= 1\n")), "line 1, column 1: TOML syntax error");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size =\n")), "TOML syntax error");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size = 1 2\n")), "TOML syntax error");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size = 012\n")), "TOML syntax error");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size = true\n")), "batch_size must be an integer, got a boolean");
  EXPECT_CONTAINS(Err(ParseJobConfig("batch_size = 1.5\n")), "batch_size must be an integer, got a float");
  EXPECT_CONTAINS(Err(ParseJobConfig("root = \"abc\n")), "TOML syntax error");
  EXPECT_CONTAINS(Err(ParseJobConfig("root = [1]\n")), "root must be a string, got an array");
  EXPECT_CONTAINS(Err(ParseJobConfig(std::string("batch_size = 1\0\n", 16))), "TOML syntax error");
  EXPECT_CONTAINS(Err(ParseJobConfig("root = \"\xff\"\n")), "TOML syntax error");  // not UTF-8
  EXPECT_CONTAINS(Err(ParseJobConfig("root = \"a\\0\"\n")), "TOML syntax error");
  EXPECT_CONTAINS(Err(ParseJobConfig("root = \"a\\u0000\"\n")), "NUL");
  EXPECT_CONTAINS(Err(ParseJobConfig("x = " + std::string(100000, '['))), "too large");
  EXPECT_CONTAINS(Err(ParseJobConfig("x = " + std::string(5000, '[') + "\n")), "TOML syntax error");
}

TEST(ParseJobConfig, FormatReadsBack) {
  JobConfig c;
  c.batch_size = 7;
  c.epochs = 3;
  c.root = "caf\xc3\xa9/with \"quotes\" and \\ and\ttab";
  c.loaders = 2;
  c.compute_ms = 12.5;
  const std::string text = FormatJobConfig(c);
  auto r = ParseJobConfig(text);
  ASSERT_TRUE(r.ok()) << text << r.status().ToString();
  EXPECT_EQ(r.value(), c) << text;
  EXPECT_NE(text.find("compute_ms = 12.5\n"), std::string::npos) << text;
  c.compute_ms.reset();
  c.root = "";
  EXPECT_EQ(FormatJobConfig(c), "batch_size = 7\nepochs = 3\nroot = \"\"\nloaders = 2\n");
}

TEST(ParseJobConfig, AnyTomlFormOfAValue) {
  // Valid TOML the old hand-written subset refused: hex/octal/binary
  // integers, \u escapes, multi-line strings, quoted keys.
  auto r = ParseJobConfig("batch_size = 0x20\nepochs = 0o7\nloaders = 0b11\n"
                          "\"root\" = \"caf\\u00e9/x\"\ncompute_ms = 2\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().batch_size, 32u);
  EXPECT_EQ(r.value().epochs, 7u);
  EXPECT_EQ(r.value().loaders, 3u);
  EXPECT_EQ(r.value().root, "caf\xc3\xa9/x");
  EXPECT_DOUBLE_EQ(*r.value().compute_ms, 2.0);
  auto m = ParseJobConfig("batch_size = 1\nepochs = 1\nroot = \"\"\"\ntrain\"\"\"\n");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m.value().root, "train");
}

// ---- samples ----

TEST(ParseSampleList, OnePathPerLine) {
  auto r = ParseSampleList("a/1.jpg\n./b/2.jpg\nc//3.jpg\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().ToStrings(), (std::vector<std::string>{"a/1.jpg", "b/2.jpg", "c/3.jpg"}));
  EXPECT_EQ(ParseSampleList("only").value().size(), 1u);
  EXPECT_EQ(ParseSampleList("with space/x y.png\n").value()[0], "with space/x y.png");
}

TEST(ParseSampleList, ErrorsNameTheLine) {
  EXPECT_EQ(Err(ParseSampleList("")), "the sample list is empty");
  EXPECT_EQ(Err(ParseSampleList("a\n\nb\n")), "line 2: empty line");
  EXPECT_EQ(Err(ParseSampleList("a\nb\n\n")), "line 3: empty line");
  EXPECT_CONTAINS(Err(ParseSampleList("a\n/abs\n")), "line 2: absolute path \"/abs\"");
  EXPECT_CONTAINS(Err(ParseSampleList("a\nb\n../x\n")), "line 3: '..' component");
  EXPECT_CONTAINS(Err(ParseSampleList(std::string("a\nb\0c\n", 6))), "line 2: NUL byte");
  EXPECT_CONTAINS(Err(ParseSampleList("a\r\nb\r\n")), "line 1: carriage return");
  EXPECT_CONTAINS(Err(ParseSampleList("a\n" + std::string(4097, 'x') + "\n")), "line 2: path longer than 4096 bytes");
  EXPECT_EQ(ParseSampleList(std::string(4096, 'x')).value()[0].size(), 4096u);
  EXPECT_EQ(Err(ParseSampleList("a/x\nb\n./a/x\n")), "line 3: duplicate of line 1: \"a/x\"");
  // The earliest line that repeats an earlier one, against that one's first.
  EXPECT_EQ(Err(ParseSampleList("a\nb\nc\nb\na\nb\n")), "line 4: duplicate of line 2: \"b\"");
  std::string many;
  for (int i = 0; i < 100000; ++i) many += "d/" + std::to_string(i) + "\n";
  EXPECT_EQ(ParseSampleList(many).value().size(), 100000u);
  EXPECT_EQ(Err(ParseSampleList(many + "d/99999\n")),
            "line 100001: duplicate of line 100000: \"d/99999\"");
}

// ---- order ----

TEST(ParseOrder, WhitespaceSeparated) {
  auto r = ParseOrder("3 1\n0\t\t2\r\n", 5);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value(), (std::vector<uint32_t>{3, 1, 0, 2}));
  EXPECT_EQ(ParseOrder("4", 5).value(), (std::vector<uint32_t>{4}));
}

TEST(ParseOrder, ErrorsNameTheToken) {
  EXPECT_EQ(Err(ParseOrder("0 1 x2", 5)), "token 3 (line 1) \"x2\": not a decimal sample index");
  EXPECT_EQ(Err(ParseOrder("0\n-1", 5)), "token 2 (line 2) \"-1\": negative index");
  EXPECT_EQ(Err(ParseOrder("0 5", 5)),
            "token 2 (line 1) \"5\": index out of range (the sample list has 5 samples)");
  EXPECT_EQ(Err(ParseOrder("1 2 1", 5)), "token 3 (line 1) \"1\": index 1 already listed as token 1");
  EXPECT_CONTAINS(Err(ParseOrder("99999999999999999999999999", 5)), "out of range");
  EXPECT_CONTAINS(Err(ParseOrder("4294967296", 5)), "out of range");
  EXPECT_CONTAINS(Err(ParseOrder("1.5", 5)), "not a decimal");
  EXPECT_CONTAINS(Err(ParseOrder("+1", 5)), "not a decimal");
  EXPECT_EQ(Err(ParseOrder(" \n ", 5)), "the order lists no samples");
  EXPECT_CONTAINS(Err(ParseOrder("0", 0)), "out of range");
}

// ---- epoch, order file names, pids ----

TEST(ParseEpochMarker, OneInteger) {
  EXPECT_EQ(ParseEpochMarker("0").value(), 0u);
  EXPECT_EQ(ParseEpochMarker(" 17\n").value(), 17u);
  EXPECT_CONTAINS(Err(ParseEpochMarker("")), "got nothing");
  EXPECT_CONTAINS(Err(ParseEpochMarker("-1")), "non-negative");
  EXPECT_CONTAINS(Err(ParseEpochMarker("1 2")), "non-negative");
  EXPECT_CONTAINS(Err(ParseEpochMarker("1000000")), "out of range");
  EXPECT_CONTAINS(Err(ParseEpochMarker("99999999999999999999")), "out of range");
}

TEST(ParseOrderFileName, Canonical) {
  EXPECT_EQ(ParseOrderFileName("0").value(), 0u);
  EXPECT_EQ(ParseOrderFileName("12").value(), 12u);
  for (const char* bad : {"", "01", "-1", "a", "1000000", "1 ", "99999999999"}) {
    EXPECT_FALSE(ParseOrderFileName(bad).ok()) << bad;
  }
}

TEST(ParsePidList, OnePerLine) {
  EXPECT_EQ(ParsePidList("12\n 34 \n12\n").value(), (std::vector<pid_t>{12, 34}));
  EXPECT_TRUE(ParsePidList("").value().empty());
  EXPECT_EQ(Err(ParsePidList("1\n\n2\n")), "line 2: empty line (expected a pid)");
  EXPECT_CONTAINS(Err(ParsePidList("0\n")), "line 1: pid \"0\" is out of range");
  EXPECT_CONTAINS(Err(ParsePidList("1\n-5\n")), "line 2: expected a positive pid");
  EXPECT_CONTAINS(Err(ParsePidList("4194305\n")), "out of range");
  EXPECT_CONTAINS(Err(ParsePidList("12abc\n")), "expected a positive pid");
}

}  // namespace
}  // namespace epochfs::control
