// Unit tests for src/config: every key, every error class, -o overrides,
// ParseBytes, and the tie between Config{}, conf/epochfs.toml and
// man/epochfs.toml.5 (EPOCHFS_SOURCE_ROOT points at the source tree).
#include "epochfs/config/config.h"
#include "epochfs/common/bytes_text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace epochfs {
namespace {

Config MustParse(const std::string& text) {
  Result<Config> r = ParseConfig(text, "t.toml");
  EXPECT_TRUE(r.ok()) << r.status().ToString() << "\n--- input:\n" << text;
  return r.ok() ? r.value() : Config{};
}

// The error message for `text`, which must fail with InvalidArgument.
std::string ErrorOf(const std::string& text) {
  Result<Config> r = ParseConfig(text, "t.toml");
  EXPECT_FALSE(r.ok()) << "accepted:\n" << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  return r.status().message();
}

std::string OverrideError(std::string_view key, std::string_view value) {
  Config c;
  Status s = ApplyOverride(&c, key, value);
  EXPECT_FALSE(s.ok()) << key << "=" << value << " accepted";
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(c, Config{}) << "a failed override changed the config";
  return s.message();
}

std::string SourceRoot() {
  const char* root = std::getenv("EPOCHFS_SOURCE_ROOT");
  return root ? root : "";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- defaults and every key -------------------------------------------------

TEST(Config, EmptyTextGivesDefaults) { EXPECT_EQ(MustParse(""), Config{}); }

TEST(Config, DefaultsMatchHeaderDocumentation) {
  Config c;
  EXPECT_TRUE(c.cache.memory_auto);
  EXPECT_EQ(c.cache.memory_bytes, 0u);
  EXPECT_EQ(c.cache.policy, PolicyKind::kFuture);
  EXPECT_EQ(c.cache.consistency, Consistency::kImmutable);
  EXPECT_EQ(c.log.level, "info");
}

TEST(Config, EveryKeyAcceptsAValidValue) {
  Config c = MustParse(R"(
[cache]
memory = "4GiB"
policy = "lru"
consistency = "open"
[warmup]
batches = 25
[policy]
gain_max = 3.5
[jobs]
orphan_grace = 0
[limits]
jobs_per_user = 3
control_files_per_user = 5
control_bytes_per_user = "8MiB"
spill_bytes_per_user = "25%"
[fuse]
threads = 8
max_background = 128
entry_timeout = 1.5
attr_timeout = 0
allow_other = true
kernel_cache = false
readdirplus = "always"
[log]
level = "debug"
)");
  EXPECT_EQ(c.cache.memory_bytes, 4ull << 30);
  EXPECT_FALSE(c.cache.memory_auto);
  EXPECT_EQ(c.cache.policy, PolicyKind::kLru);
  EXPECT_EQ(c.cache.consistency, Consistency::kOpen);
  EXPECT_EQ(c.warmup.batches, 25u);
  EXPECT_DOUBLE_EQ(c.policy.gain_max, 3.5);
  EXPECT_EQ(c.jobs.orphan_grace, 0u);
  EXPECT_EQ(c.limits.jobs_per_user, 3u);
  EXPECT_EQ(c.limits.control_files_per_user, 5u);
  EXPECT_EQ(c.limits.control_bytes_per_user, 8ull << 20);
  EXPECT_EQ(c.limits.spill_bytes_per_user, MemoryAmount::Percent(25.0));
  EXPECT_EQ(c.fuse.threads, 8u);
  EXPECT_EQ(c.fuse.max_background, 128u);
  EXPECT_DOUBLE_EQ(c.fuse.entry_timeout, 1.5);
  EXPECT_DOUBLE_EQ(c.fuse.attr_timeout, 0.0);
  EXPECT_TRUE(c.fuse.allow_other);
  EXPECT_FALSE(c.fuse.kernel_cache);
  EXPECT_EQ(c.fuse.readdirplus, ReaddirPlus::kAlways);
  EXPECT_EQ(c.log.level, "debug");
}

TEST(Config, MemoryForms) {
  EXPECT_EQ(MustParse("cache.memory = 1048576").cache.memory_bytes, 1048576u);
  EXPECT_FALSE(MustParse("cache.memory = 1048576").cache.memory_auto);
  EXPECT_EQ(MustParse("cache.memory = \"512MiB\"").cache.memory_bytes, 512ull << 20);
  EXPECT_EQ(MustParse("cache.memory = \"100k\"").cache.memory_bytes, 102400u);
  Config a = MustParse("[cache]\nmemory = \"auto\"");
  EXPECT_TRUE(a.cache.memory_auto);
  EXPECT_EQ(a.cache.memory_bytes, 0u);
}

TEST(Config, RequestBytesForms) {
  Config a = MustParse("cache.request_bytes = \"auto\"");
  EXPECT_TRUE(a.cache.request_bytes_auto);
  EXPECT_EQ(a.cache.request_bytes, 0u);
  Config b = MustParse("cache.request_bytes = \"32KiB\"");
  EXPECT_FALSE(b.cache.request_bytes_auto);
  EXPECT_EQ(b.cache.request_bytes, 32u * 1024);
  EXPECT_EQ(MustParse("cache.request_bytes = 0").cache.request_bytes, 0u);
  EXPECT_FALSE(MustParse("cache.request_bytes = 0").cache.request_bytes_auto);
}

TEST(Config, GovernorKeys) {
  Config c = MustParse(R"(
[cache]
memory_margin = "512MiB"
memory_min = 1048576
memory_max = "75.5%"
governor_interval = 0.25
governor_horizon = 600
governor_window = 10.0
)");
  EXPECT_EQ(c.cache.memory_margin, MemoryAmount::Bytes(512ull << 20));
  EXPECT_EQ(c.cache.memory_min, MemoryAmount::Bytes(1048576));
  EXPECT_EQ(c.cache.memory_max, MemoryAmount::Percent(75.5));
  EXPECT_DOUBLE_EQ(c.cache.governor_interval, 0.25);
  EXPECT_DOUBLE_EQ(c.cache.governor_horizon, 600.0);
  EXPECT_DOUBLE_EQ(c.cache.governor_window, 10.0);
  EXPECT_EQ(c.cache.memory_max.Of(1000), 755u);
  EXPECT_EQ(c.cache.memory_min.Of(1000), 1048576u);
  // Defaults.
  const Config d;
  EXPECT_EQ(d.cache.memory_margin, MemoryAmount::Percent(5.0));
  EXPECT_EQ(d.cache.memory_min, MemoryAmount::Bytes(64ull << 20));
  EXPECT_EQ(d.cache.memory_max, MemoryAmount::Percent(90.0));
  EXPECT_DOUBLE_EQ(d.cache.governor_interval, 0.5);
  // -o forms.
  Config o;
  ASSERT_TRUE(ApplyOverride(&o, "cache.memory_margin", "10%").ok());
  EXPECT_EQ(o.cache.memory_margin, MemoryAmount::Percent(10.0));
  ASSERT_TRUE(ApplyOverride(&o, "cache.memory_margin", "128MiB").ok());
  EXPECT_EQ(o.cache.memory_margin, MemoryAmount::Bytes(128ull << 20));
  ASSERT_TRUE(ApplyOverride(&o, "cache.governor_interval", "2").ok());
  EXPECT_DOUBLE_EQ(o.cache.governor_interval, 2.0);
  // Bad values name the key.
  for (const char* bad : {"0%", "101%", "-1%", "x%", "%", "lots", "5 %%"}) {
    EXPECT_NE(OverrideError("cache.memory_margin", bad).find("cache.memory_margin"),
              std::string::npos)
        << bad;
  }
  EXPECT_NE(OverrideError("cache.governor_interval", "0").find("cache.governor_interval"),
            std::string::npos);
  EXPECT_NE(OverrideError("cache.governor_window", "0.5").find("cache.governor_window"),
            std::string::npos);
  EXPECT_NE(ErrorOf("cache.memory_max = true").find("cache.memory_max"), std::string::npos);
}

TEST(Config, EnumsAndLevelsAllAccepted) {
  EXPECT_EQ(MustParse("cache.policy = \"lru\"").cache.policy, PolicyKind::kLru);
  EXPECT_EQ(MustParse("cache.consistency = \"immutable\"").cache.consistency,
            Consistency::kImmutable);
  for (const char* level : {"debug", "info", "warn", "error", "off"}) {
    EXPECT_EQ(MustParse(std::string("log.level = \"") + level + "\"").log.level, level);
  }
}

TEST(Config, RangeBoundsAccepted) {
  EXPECT_EQ(MustParse("fuse.threads = 64").fuse.threads, 64u);
  EXPECT_EQ(MustParse("fuse.threads = 0").fuse.threads, 0u);
  EXPECT_EQ(MustParse("fuse.max_background = 1").fuse.max_background, 1u);
  EXPECT_EQ(MustParse("fuse.max_background = 65535").fuse.max_background, 65535u);
  EXPECT_DOUBLE_EQ(MustParse("policy.gain_max = 1").policy.gain_max, 1.0);  // integer ok
  EXPECT_DOUBLE_EQ(MustParse("policy.gain_max = 100.0").policy.gain_max, 100.0);
  EXPECT_EQ(MustParse("warmup.batches = 4294967295").warmup.batches, 4294967295u);
}

TEST(Config, InlineAndDottedTablesWork) {
  Config c = MustParse("cache = { policy = \"lru\" }\nfuse.threads = 2\n");
  EXPECT_EQ(c.cache.policy, PolicyKind::kLru);
  EXPECT_EQ(c.fuse.threads, 2u);
}

// ---- errors -----------------------------------------------------------------

TEST(ConfigErrors, UnknownKeyNamesKeyAndLine) {
  std::string m = ErrorOf("[cache]\npolicy = \"lru\"\nmemroy = \"4GiB\"\n");
  EXPECT_NE(m.find("t.toml:3: cache.memroy: unknown key"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean cache.memory?"), std::string::npos) << m;
}

TEST(ConfigErrors, UnknownSection) {
  std::string m = ErrorOf("[cache]\npolicy = \"lru\"\n\n[swap]\npath = \"/ssd\"\n");
  EXPECT_NE(m.find("t.toml:4: swap: unknown section"), std::string::npos) << m;
}

TEST(ConfigErrors, NestedTableIsUnknownKey) {
  std::string m = ErrorOf("[cache]\npolicy = \"lru\"\n[cache.extra]\nx = 1\n");
  EXPECT_NE(m.find("t.toml:3: cache.extra: unknown key"), std::string::npos) << m;
}

TEST(ConfigErrors, TopLevelKeyIsUnknown) {
  std::string m = ErrorOf("memory = \"4GiB\"\n");
  EXPECT_NE(m.find("t.toml:1: memory: unknown key"), std::string::npos) << m;
  EXPECT_NE(m.find("cache.memory"), std::string::npos) << m;  // the hint
}

TEST(ConfigErrors, SectionThatIsNotATable) {
  std::string m = ErrorOf("\ncache = 5\n");
  EXPECT_NE(m.find("t.toml:2: cache: expected a table"), std::string::npos) << m;
  m = ErrorOf("[[fuse]]\nthreads = 1\n");
  EXPECT_NE(m.find("fuse: expected a table"), std::string::npos) << m;
}

TEST(ConfigErrors, WrongTypes) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"[fuse]\nthreads = \"4\"", "t.toml:2: fuse.threads: expected integer 0..64"},
      {"[fuse]\nthreads = 2.5", "t.toml:2: fuse.threads: expected integer 0..64"},
      {"[fuse]\nallow_other = \"yes\"", "t.toml:2: fuse.allow_other: expected true or false"},
      {"[fuse]\nallow_other = 1", "t.toml:2: fuse.allow_other: expected true or false, got 1"},
      {"[fuse]\nentry_timeout = \"1s\"", "t.toml:2: fuse.entry_timeout: expected seconds >= 0"},
      {"[cache]\npolicy = 1", "t.toml:2: cache.policy: expected \"lru\", \"epoch\" or \"future\", got 1"},
      {"[cache]\nmemory = true", "t.toml:2: cache.memory: expected bytes"},
      {"[cache]\nmemory = 4.5", "t.toml:2: cache.memory: expected bytes"},
      {"[cache]\nmemory = [1, 2]",
       "t.toml:2: cache.memory: expected bytes (\"4GiB\", integer) "
       "or \"auto\", got an array"},
      {"[log]\nlevel = { x = 1 }", "t.toml:2: log.level: expected"},
      {"[jobs]\norphan_grace = 1979-05-27", "t.toml:2: jobs.orphan_grace: expected"},
      {"[warmup]\nbatches = false", "t.toml:2: warmup.batches: expected integer >= 0, got false"},
      {"[policy]\ngain_max = \"2\"", "t.toml:2: policy.gain_max: expected number 1.0..100"},
  };
  for (const Case& c : cases) {
    std::string m = ErrorOf(c.text);
    EXPECT_NE(m.find(c.want), std::string::npos) << "input: " << c.text << "\nmessage: " << m;
  }
}

TEST(ConfigErrors, OutOfRange) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"fuse.threads = 65",
       "t.toml:1: fuse.threads: expected integer 0..64 (0: two per core, at least 4; 16 with "
       "lower.read_slots), got 65"},
      {"fuse.threads = -1",
       "fuse.threads: expected integer 0..64 (0: two per core, at least 4; 16 with "
       "lower.read_slots), got -1"},
      {"fuse.max_background = 0", "fuse.max_background: expected integer 1..65535, got 0"},
      {"fuse.max_background = 65536", "fuse.max_background: expected integer 1..65535"},
      {"fuse.entry_timeout = -0.5", "fuse.entry_timeout: expected seconds >= 0, got -0.5"},
      {"fuse.attr_timeout = nan", "fuse.attr_timeout: expected seconds >= 0, got nan"},
      {"fuse.attr_timeout = inf", "fuse.attr_timeout: expected seconds >= 0, got inf"},
      {"policy.gain_max = 0.99", "policy.gain_max: expected number 1.0..100, got 0.99"},
      {"policy.gain_max = 100.5", "policy.gain_max: expected number 1.0..100, got 100.5"},
      {"warmup.batches = -1", "warmup.batches: expected integer >= 0, got -1"},
      {"warmup.batches = 4294967296", "warmup.batches: expected integer >= 0"},
      {"jobs.orphan_grace = -5", "jobs.orphan_grace: expected integer seconds >= 0, got -5"},
      {"cache.memory = 0", "cache.memory: expected bytes (\"4GiB\", integer) or \"auto\", got 0"},
      {"cache.memory = -4096",
       "cache.memory: expected bytes (\"4GiB\", integer) or \"auto\", "
       "got -4096"},
  };
  for (const Case& c : cases) {
    std::string m = ErrorOf(c.text);
    EXPECT_NE(m.find(c.want), std::string::npos) << "input: " << c.text << "\nmessage: " << m;
  }
}

TEST(ConfigErrors, BadSizeStrings) {
  for (const char* bad : {"lots", "", "0", "0GiB", "4 XB", "-4GiB", "GiB", "4GiBs", "1.5",
                          "99999999999999999999", "20000000TiB", "Auto", " auto"}) {
    std::string text = std::string("\n\n[cache]\nmemory = \"") + bad + "\"\n";
    std::string m = ErrorOf(text);
    EXPECT_NE(m.find("t.toml:4: cache.memory: expected bytes (\"4GiB\", integer) or \"auto\", "
                     "got \"" +
                     std::string(bad) + "\""),
              std::string::npos)
        << m;
  }
}

TEST(ConfigErrors, TheBriefsExampleMessage) {
  std::string text = "# 1\n# 2\n# 3\n# 4\n# 5\n[cache]\nmemory = \"lots\"\n";
  Result<Config> r = ParseConfig(text, "conf.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "conf.toml:7: cache.memory: expected bytes (\"4GiB\", integer) or \"auto\", got "
            "\"lots\"");
}

TEST(ConfigErrors, BadEnums) {
  EXPECT_NE(ErrorOf("cache.policy = \"LRU\"")
                .find("cache.policy: expected \"lru\", \"epoch\" or \"future\", got \"LRU\""),
            std::string::npos);
  EXPECT_NE(ErrorOf("cache.consistency = \"mutable\"")
                .find("cache.consistency: expected \"immutable\" or \"open\", got \"mutable\""),
            std::string::npos);
  EXPECT_NE(
      ErrorOf("log.level = \"verbose\"")
          .find("log.level: expected \"debug\", \"info\", \"warn\", \"error\" or \"off\", got "
                "\"verbose\""),
      std::string::npos);
}

TEST(ConfigErrors, EscapesControlCharactersInValues) {
  std::string m = ErrorOf("log.level = \"a\\nb\\\"c\"");
  EXPECT_NE(m.find("got \"a\\x0ab\\\"c\""), std::string::npos) << m;
}

TEST(ConfigErrors, SyntaxErrorNamesFileLineColumn) {
  std::string m = ErrorOf("[cache]\npolicy = \"lru\"\nmemory = = 3\n");
  EXPECT_EQ(m.rfind("t.toml:3:", 0), 0u) << m;
  EXPECT_NE(m.find("TOML syntax error"), std::string::npos) << m;
  // line:column, column being a number
  EXPECT_TRUE(m.size() > 9 && m[9] >= '1' && m[9] <= '9') << m;
}

TEST(ConfigErrors, SyntaxErrorsOfOtherKinds) {
  EXPECT_EQ(ErrorOf("[cache]\npolicy = \"lru\"\npolicy = \"epoch\"\n").rfind("t.toml:3:", 0), 0u);
  EXPECT_EQ(ErrorOf("[cache\n").rfind("t.toml:1:", 0), 0u);
  EXPECT_EQ(ErrorOf("x = \"unterminated\n").rfind("t.toml:1:", 0), 0u);
  EXPECT_EQ(ErrorOf("fuse.threads = 99999999999999999999\n").rfind("t.toml:1:", 0), 0u);
  EXPECT_NE(ErrorOf(std::string("a = \"\xff\"\n")).find("TOML syntax error"), std::string::npos);
}

TEST(ConfigErrors, AllProblemsReportedInFileOrder) {
  std::string m = ErrorOf("[log]\nlevel = \"loud\"\n[cache]\nzzz = 1\naaa = 2\npolicy = 3\n");
  std::vector<std::string> lines;
  std::istringstream in(m);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 4u) << m;
  EXPECT_EQ(lines[0].rfind("t.toml:2: log.level:", 0), 0u) << m;
  EXPECT_EQ(lines[1].rfind("t.toml:4: cache.zzz:", 0), 0u) << m;
  EXPECT_EQ(lines[2].rfind("t.toml:5: cache.aaa:", 0), 0u) << m;
  EXPECT_EQ(lines[3].rfind("t.toml:6: cache.policy:", 0), 0u) << m;
}

TEST(ConfigFile, MissingFileIsNotFound) {
  Result<Config> r = LoadConfigFile("/nonexistent/epochfs.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/epochfs.toml"), std::string::npos);
}

TEST(ConfigFile, DirectoryIsAnError) {
  Result<Config> r = LoadConfigFile("/");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/"), std::string::npos);
}

TEST(ConfigFile, ErrorsNameThePath) {
  std::string path = testing::TempDir() + "epochfs_config_test.toml";
  {
    std::ofstream out(path);
    out << "[fuse]\nthreads = 4\nmax_background = 0\n";
  }
  Result<Config> r = LoadConfigFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            path + ":3: fuse.max_background: expected integer 1..65535, got 0");
  {
    std::ofstream out(path);
    out << "[fuse]\nthreads = 4\n";
  }
  Result<Config> ok = LoadConfigFile(path);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok.value().fuse.threads, 4u);
  std::remove(path.c_str());
}

// ---- -o overrides -----------------------------------------------------------

TEST(Override, EveryKeyType) {
  Config c;
  ASSERT_TRUE(ApplyOverride(&c, "cache.memory", "8GiB").ok());
  EXPECT_EQ(c.cache.memory_bytes, 8ull << 30);
  EXPECT_FALSE(c.cache.memory_auto);
  ASSERT_TRUE(ApplyOverride(&c, "cache.memory", "123456").ok());
  EXPECT_EQ(c.cache.memory_bytes, 123456u);
  ASSERT_TRUE(ApplyOverride(&c, "cache.memory", "auto").ok());
  EXPECT_TRUE(c.cache.memory_auto);
  EXPECT_EQ(c.cache.memory_bytes, 0u);
  ASSERT_TRUE(ApplyOverride(&c, "cache.policy", "epoch").ok());
  EXPECT_EQ(c.cache.policy, PolicyKind::kEpoch);
  ASSERT_TRUE(ApplyOverride(&c, "cache.consistency", "open").ok());
  EXPECT_EQ(c.cache.consistency, Consistency::kOpen);
  ASSERT_TRUE(ApplyOverride(&c, "warmup.batches", "10").ok());
  EXPECT_EQ(c.warmup.batches, 10u);
  ASSERT_TRUE(ApplyOverride(&c, "policy.gain_max", "1.25").ok());
  EXPECT_DOUBLE_EQ(c.policy.gain_max, 1.25);
  ASSERT_TRUE(ApplyOverride(&c, "policy.gain_max", "3").ok());
  EXPECT_DOUBLE_EQ(c.policy.gain_max, 3.0);
  ASSERT_TRUE(ApplyOverride(&c, "jobs.orphan_grace", "30").ok());
  EXPECT_EQ(c.jobs.orphan_grace, 30u);
  ASSERT_TRUE(ApplyOverride(&c, "fuse.threads", "4").ok());
  EXPECT_EQ(c.fuse.threads, 4u);
  ASSERT_TRUE(ApplyOverride(&c, "fuse.max_background", "256").ok());
  EXPECT_EQ(c.fuse.max_background, 256u);
  ASSERT_TRUE(ApplyOverride(&c, "fuse.entry_timeout", "0.5").ok());
  EXPECT_DOUBLE_EQ(c.fuse.entry_timeout, 0.5);
  ASSERT_TRUE(ApplyOverride(&c, "fuse.attr_timeout", "2").ok());
  EXPECT_DOUBLE_EQ(c.fuse.attr_timeout, 2.0);
  ASSERT_TRUE(ApplyOverride(&c, "fuse.allow_other", "true").ok());
  EXPECT_TRUE(c.fuse.allow_other);
  ASSERT_TRUE(ApplyOverride(&c, "fuse.allow_other", "false").ok());
  EXPECT_FALSE(c.fuse.allow_other);
  ASSERT_TRUE(ApplyOverride(&c, "fuse.kernel_cache", "false").ok());
  EXPECT_FALSE(c.fuse.kernel_cache);
  ASSERT_TRUE(ApplyOverride(&c, "fuse.readdirplus", "always").ok());
  EXPECT_EQ(c.fuse.readdirplus, ReaddirPlus::kAlways);
  EXPECT_FALSE(ApplyOverride(&c, "fuse.readdirplus", "sometimes").ok());
  ASSERT_TRUE(ApplyOverride(&c, "log.level", "warn").ok());
  EXPECT_EQ(c.log.level, "warn");
  ASSERT_TRUE(ApplyOverride(&c, "trace.file", "/var/tmp/policy.trace").ok());
  EXPECT_EQ(c.trace.file, "/var/tmp/policy.trace");
  ASSERT_TRUE(ApplyOverride(&c, "log.file", "/var/log/epochfs.log").ok());
  EXPECT_EQ(c.log.file, "/var/log/epochfs.log");
  ASSERT_TRUE(ApplyOverride(&c, "log.max_bytes", "1MiB").ok());
  EXPECT_EQ(c.log.max_bytes, 1ull << 20);
  ASSERT_TRUE(ApplyOverride(&c, "log.files", "2").ok());
  EXPECT_EQ(c.log.files, 2u);
  ASSERT_TRUE(ApplyOverride(&c, "metrics.listen", "[::1]:9464").ok());
  EXPECT_EQ(c.metrics.listen, "[::1]:9464");
  ASSERT_TRUE(ApplyOverride(&c, "metrics.listen", "").ok());
  EXPECT_EQ(c.metrics.listen, "");
}

TEST(Override, OverridesFileValues) {
  Config c = MustParse("[fuse]\nthreads = 4\n");
  ASSERT_TRUE(ApplyOverride(&c, "fuse.threads", "2").ok());
  EXPECT_EQ(c.fuse.threads, 2u);
}

TEST(Override, SpillKeys) {
  Config c;
  ASSERT_TRUE(ApplyOverride(&c, "spill.path", "/var/ssd/spill").ok());
  ASSERT_TRUE(ApplyOverride(&c, "spill.max_bytes", "64GiB").ok());
  ASSERT_TRUE(ApplyOverride(&c, "spill.staging", "512MiB").ok());
  ASSERT_TRUE(ApplyOverride(&c, "spill.compress", "false").ok());
  ASSERT_TRUE(ApplyOverride(&c, "spill.num_prefetch", "3").ok());
  EXPECT_EQ(c.spill.path, "/var/ssd/spill");
  EXPECT_EQ(c.spill.max_bytes, 64ull << 30);
  EXPECT_EQ(c.spill.staging, 512ull << 20);
  EXPECT_FALSE(c.spill.compress);
  EXPECT_EQ(c.spill.num_prefetch, 3u);
  Config f = MustParse("[spill]\npath = \"/ssd\"\nmax_bytes = 1048576\nstaging = \"8MiB\"\n");
  EXPECT_EQ(f.spill.max_bytes, 1048576u);
  EXPECT_EQ(f.spill.staging, 8ull << 20);
}

TEST(Override, BlockSize) {
  Config c;
  EXPECT_EQ(c.cache.block_size, 4ull << 20);
  ASSERT_TRUE(ApplyOverride(&c, "cache.block_size", "64KiB").ok());
  EXPECT_EQ(c.cache.block_size, 64ull << 10);
  ASSERT_TRUE(ApplyOverride(&c, "cache.block_size", "0").ok());
  EXPECT_EQ(c.cache.block_size, 0u);
  ASSERT_TRUE(ApplyOverride(&c, "cache.block_size", "1GiB").ok());
  EXPECT_EQ(c.cache.block_size, 1ull << 30);
  EXPECT_EQ(MustParse("[cache]\nblock_size = 1048576\n").cache.block_size, 1ull << 20);
}

TEST(Override, Errors) {
  struct Case {
    const char* key;
    const char* value;
    const char* want;
  } cases[] = {
      {"cache.memroy", "4GiB", "-o cache.memroy: unknown config key (did you mean cache.memory?)"},
      {"swap.path", "/ssd", "-o swap.path: unknown config key"},
      {"cache", "x", "-o cache: unknown config key"},
      {"cache.memory", "lots",
       "-o cache.memory: expected bytes (\"4GiB\", integer) or \"auto\", got \"lots\""},
      {"cache.memory", "0", "-o cache.memory: expected bytes"},
      {"cache.memory", "-1G", "-o cache.memory: expected bytes"},
      {"cache.policy", "fifo", "-o cache.policy: expected \"lru\", \"epoch\" or \"future\", got \"fifo\""},
      {"cache.consistency", "", "-o cache.consistency: expected \"immutable\" or \"open\""},
      {"warmup.batches", "1.5", "-o warmup.batches: expected integer >= 0, got \"1.5\""},
      {"warmup.batches", "-1", "-o warmup.batches: expected integer >= 0, got \"-1\""},
      {"warmup.batches", "", "-o warmup.batches: expected integer >= 0, got \"\""},
      {"warmup.batches", " 5", "-o warmup.batches: expected integer >= 0"},
      {"warmup.batches", "5x", "-o warmup.batches: expected integer >= 0"},
      {"policy.gain_max", "0.5", "-o policy.gain_max: expected number 1.0..100, got \"0.5\""},
      {"spill.staging", "1MiB", "-o spill.staging: expected bytes >= 4MiB"},
      {"cache.block_size", "32KiB", "-o cache.block_size: expected 0, or bytes 64KiB..1GiB"},
      {"cache.block_size", "2GiB", "-o cache.block_size: expected 0, or bytes 64KiB..1GiB"},
      {"cache.block_size", "100000", "-o cache.block_size: expected 0, or bytes 64KiB..1GiB"},
      {"spill.max_bytes", "-5", "-o spill.max_bytes: expected bytes"},
      {"spill.queue_depth", "0", "-o spill.queue_depth: expected integer 1..256"},
      {"policy.gain_max", "nan", "-o policy.gain_max: expected number 1.0..100"},
      {"policy.gain_max", "two", "-o policy.gain_max: expected number 1.0..100"},
      {"jobs.orphan_grace", "10m", "-o jobs.orphan_grace: expected integer seconds >= 0"},
      {"fuse.threads", "65", "-o fuse.threads: expected integer 0..64"},
      {"fuse.threads", "99999999999999999999999", "-o fuse.threads: expected integer 0..64"},
      {"fuse.max_background", "0", "-o fuse.max_background: expected integer 1..65535"},
      {"fuse.entry_timeout", "-1", "-o fuse.entry_timeout: expected seconds >= 0"},
      {"fuse.attr_timeout", "inf", "-o fuse.attr_timeout: expected seconds >= 0"},
      {"fuse.allow_other", "yes", "-o fuse.allow_other: expected true or false, got \"yes\""},
      {"fuse.allow_other", "", "-o fuse.allow_other: expected true or false"},
      {"log.max_bytes", "1000", "-o log.max_bytes: expected bytes >= 64KiB"},
      {"log.files", "0", "-o log.files: expected an integer 1..100"},
      {"metrics.listen", "9464", "-o metrics.listen: expected \"ADDR:PORT\""},
      {"metrics.listen", "example.org:80", "-o metrics.listen: expected \"ADDR:PORT\""},
      {"log.level", "trace",
       "-o log.level: expected \"debug\", \"info\", \"warn\", \"error\" "
       "or \"off\", got \"trace\""},
  };
  for (const Case& c : cases) {
    std::string m = OverrideError(c.key, c.value);
    EXPECT_NE(m.find(c.want), std::string::npos)
        << "-o " << c.key << "=" << c.value << "\nmessage: " << m;
  }
}

TEST(Override, IsConfigKey) {
  for (const std::string& k : ConfigKeys()) EXPECT_TRUE(IsConfigKey(k)) << k;
  for (const char* k : {"allow_other", "ro", "auto_unmount", "cache", "memory", "cache.", ".memory",
                        "cache.memory.x", "CACHE.MEMORY", ""}) {
    EXPECT_FALSE(IsConfigKey(k)) << k;
  }
}

TEST(Override, KeysAreDottedUniqueAndGroupedBySection) {
  std::vector<std::string> keys = ConfigKeys();
  ASSERT_EQ(keys.size(), 57u);
  EXPECT_EQ(keys.front(), "cache.memory");
  std::set<std::string> unique(keys.begin(), keys.end());
  EXPECT_EQ(unique.size(), keys.size());
  std::set<std::string> finished_sections;
  std::string current;
  for (const std::string& k : keys) {
    size_t dot = k.find('.');
    ASSERT_NE(dot, std::string::npos) << k;
    std::string section = k.substr(0, dot);
    if (section != current) {
      EXPECT_EQ(finished_sections.count(section), 0u) << "section split: " << section;
      if (!current.empty()) finished_sections.insert(current);
      current = section;
    }
  }
}

// ---- ParseBytes -------------------------------------------------------------

TEST(ParseBytes, Table) {
  struct Case {
    const char* text;
    uint64_t want;
  } cases[] = {
      {"0", 0},
      {"123", 123},
      {"007", 7},
      {"1B", 1},
      {"100k", 102400},
      {"100K", 102400},
      {"1KiB", 1024},
      {"1kib", 1024},
      {"1KB", 1000},
      {"512MiB", 512ull << 20},
      {"512M", 512ull << 20},
      {"512m", 512ull << 20},
      {"2MB", 2000000},
      {"4GiB", 4ull << 30},
      {"4G", 4ull << 30},
      {"4GB", 4000000000ull},
      {"1TiB", 1ull << 40},
      {"1T", 1ull << 40},
      {"3TB", 3000000000000ull},
      {"1.5GiB", 3ull << 29},
      {"0.5k", 512},
      {"0.1k", 102},  // rounds down
      {"1.000000001G", 1073741825},
      {"4 GiB", 4ull << 30},
      {"  4GiB\t", 4ull << 30},
      {"18446744073709551615", 18446744073709551615ull},
      {"16777215TiB", 16777215ull << 40},
  };
  for (const Case& c : cases) {
    Result<uint64_t> r = ParseBytes(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().ToString();
    EXPECT_EQ(r.value(), c.want) << c.text;
  }
}

TEST(ParseBytes, Rejects) {
  for (const char* bad : {"",
                          " ",
                          "-1",
                          "-0",
                          "+5",
                          "lots",
                          "k",
                          "GiB",
                          "4X",
                          "4 4",
                          "4GiBB",
                          "4Gi",
                          "4iB",
                          "1.5",
                          "1.",
                          ".5k",
                          "1..5k",
                          "1.5.5k",
                          "0x10",
                          "1e9",
                          "4,096",
                          "1.0000000001G",
                          "18446744073709551616",
                          "99999999999999999999999",
                          "16777216TiB",
                          "17179869184G",
                          "18446744073709551615k",
                          "4\nG",
                          "nan",
                          "inf"}) {
    Result<uint64_t> r = ParseBytes(bad);
    EXPECT_FALSE(r.ok()) << "accepted \"" << bad << "\" as " << (r.ok() ? r.value() : 0);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
      EXPECT_NE(r.status().message().find("bad size"), std::string::npos);
    }
  }
}

TEST(ParseBytes, FractionNearTheTop) {
  EXPECT_EQ(ParseBytes("16777215.5TiB").value(), (16777215ull << 40) + (1ull << 39));
  // 18446744073709551 * 1000 + 615 == 2^64 - 1; one more overflows in the sum.
  EXPECT_EQ(ParseBytes("18446744073709551.615KB").value(), 18446744073709551615ull);
  EXPECT_FALSE(ParseBytes("18446744073709551.616KB").ok());
  EXPECT_FALSE(ParseBytes("18446744073709551615.5k").ok());
}

// ---- the tie: Config{} == conf/epochfs.toml == man/epochfs.toml.5 -----------

// section.key for every uncommented `key = value` line of a TOML file.
std::vector<std::string> KeysInConfText(const std::string& text) {
  std::vector<std::string> keys;
  std::istringstream in(text);
  std::string section;
  for (std::string line; std::getline(in, line);) {
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    line = line.substr(b);
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    if (line[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, line.find_first_of(" \t="));
    keys.push_back(section.empty() ? key : section + "." + key);
  }
  return keys;
}

TEST(Tie, ConfFileLoadsToTheBuiltInDefaults) {
  ASSERT_FALSE(SourceRoot().empty()) << "EPOCHFS_SOURCE_ROOT not set";
  Result<Config> r = LoadConfigFile(SourceRoot() + "/conf/epochfs.toml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Config& c = r.value();
  const Config d;
  // Field by field first, for readable failures; then the whole struct.
  EXPECT_EQ(c.cache.memory_bytes, d.cache.memory_bytes);
  EXPECT_EQ(c.cache.memory_auto, d.cache.memory_auto);
  EXPECT_EQ(c.cache.policy, d.cache.policy);
  EXPECT_EQ(c.cache.consistency, d.cache.consistency);
  EXPECT_EQ(c.warmup.batches, d.warmup.batches);
  EXPECT_EQ(c.policy.gain_max, d.policy.gain_max);
  EXPECT_EQ(c.jobs.orphan_grace, d.jobs.orphan_grace);
  EXPECT_EQ(c.fuse.threads, d.fuse.threads);
  EXPECT_EQ(c.fuse.max_background, d.fuse.max_background);
  EXPECT_EQ(c.fuse.entry_timeout, d.fuse.entry_timeout);
  EXPECT_EQ(c.fuse.attr_timeout, d.fuse.attr_timeout);
  EXPECT_EQ(c.fuse.allow_other, d.fuse.allow_other);
  EXPECT_EQ(c.log.level, d.log.level);
  EXPECT_EQ(c, d);  // defaulted operator==: also catches fields added later
}

TEST(Tie, ConfFileListsExactlyTheConfigKeysInOrder) {
  std::string text = ReadAll(SourceRoot() + "/conf/epochfs.toml");
  ASSERT_FALSE(text.empty());
  std::vector<std::string> in_file = KeysInConfText(text);
  EXPECT_EQ(in_file, ConfigKeys());
  for (const std::string& k : in_file) EXPECT_TRUE(IsConfigKey(k)) << k;
}

TEST(Tie, ChangingAValueInTheConfFileIsSeen) {
  // Guards the tie itself: the file's values are really read, not ignored.
  std::string text = ReadAll(SourceRoot() + "/conf/epochfs.toml");
  std::string changed = text;
  size_t at = changed.find("threads = 0");
  ASSERT_NE(at, std::string::npos);
  changed.replace(at, 11, "threads = 1");
  Result<Config> r = ParseConfig(changed, "changed");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r.value(), Config{});
}

TEST(Tie, ManPageDocumentsEveryKey) {
  std::string man = ReadAll(SourceRoot() + "/man/epochfs.toml.5");
  ASSERT_FALSE(man.empty());
  for (const std::string& k : ConfigKeys()) {
    EXPECT_NE(man.find(k), std::string::npos) << k << " missing from man/epochfs.toml.5";
  }
  // The other way round: every key entry of the KEYS section (".TP" then
  // ".B section.key", outside .RS/.RE value lists) is a real key, in order.
  size_t begin = man.find(".SH KEYS");
  ASSERT_NE(begin, std::string::npos);
  size_t end = man.find("\n.SH ", begin + 1);
  std::istringstream in(man.substr(begin, end - begin));
  std::vector<std::string> entries;
  bool after_tp = false;
  int depth = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(".RS", 0) == 0) ++depth;
    if (line.rfind(".RE", 0) == 0) --depth;
    if (depth == 0 && after_tp && line.rfind(".B ", 0) == 0) {
      std::string key = line.substr(3);
      entries.push_back(key);
      EXPECT_TRUE(IsConfigKey(key)) << "man page documents unknown key " << key;
    }
    after_tp = line == ".TP";
  }
  EXPECT_EQ(entries, ConfigKeys());
}

TEST(Tie, DaemonManPageMentionsTheConfig) {
  std::string man = ReadAll(SourceRoot() + "/man/epochfs.8");
  ASSERT_FALSE(man.empty());
  EXPECT_NE(man.find("epochfs.toml (5)"), std::string::npos);
  EXPECT_NE(man.find("cache.memory"), std::string::npos);
}

}  // namespace
}  // namespace epochfs
