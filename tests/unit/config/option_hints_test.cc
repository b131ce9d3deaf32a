// Unit tests for the option hints: the look-alikes of JuiceFS, rclone and
// mountpoint-s3 map to an epochfs key with the value converted, every key a
// hint names is a config key, and a hint's suggestion is accepted as it is.
#include "epochfs/config/option_hints.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "epochfs/config/config.h"

namespace epochfs {
namespace option_hints_test {

std::string Instead(std::string_view name, std::string_view value) {
  std::optional<OptionHint> h = HintForOption(name, value);
  EXPECT_TRUE(h.has_value()) << name;
  return h ? h->instead : "";
}

TEST(OptionHints, SizesBecomeCacheMemoryInBinaryUnits) {
  EXPECT_EQ(Instead("cache-size", "1G"), "use -o cache.memory=1GiB");
  EXPECT_EQ(Instead("cache-size", "512M"), "use -o cache.memory=512MiB");
  EXPECT_EQ(Instead("cache-size", "1.5G"), "use -o cache.memory=1536MiB");
  // A plain number is in the tool's own unit: MiB for JuiceFS and
  // mountpoint-s3, KiB for rclone.
  EXPECT_EQ(Instead("cache-size", "102400"), "use -o cache.memory=100GiB");
  EXPECT_EQ(Instead("max-cache-size", "2048"), "use -o cache.memory=2GiB");
  EXPECT_EQ(Instead("vfs-cache-max-size", "10G"), "use -o cache.memory=10GiB");
  EXPECT_EQ(Instead("vfs-cache-max-size", "3"), "use -o cache.memory=3KiB");
  EXPECT_EQ(Instead("cache-size", ""), "use -o cache.memory=SIZE");
  EXPECT_EQ(Instead("cache-size", "lots"), "use -o cache.memory=SIZE");
  EXPECT_EQ(HintForOption("cache-size", "1G")->tool, "JuiceFS");
}

TEST(OptionHints, NamesMatchWithUnderscoresAndAnyCase) {
  EXPECT_EQ(Instead("cache_size", "1G"), "use -o cache.memory=1GiB");
  EXPECT_EQ(Instead("Cache-Size", "1G"), "use -o cache.memory=1GiB");
}

TEST(OptionHints, OtherValuesAreConverted) {
  EXPECT_EQ(Instead("attr-cache", "1s"), "use -o fuse.attr_timeout=1");
  EXPECT_EQ(Instead("dir-cache-time", "5m"), "use -o fuse.entry_timeout=300");
  EXPECT_EQ(Instead("attr-timeout", "soon"), "use -o fuse.attr_timeout=SECONDS");
  EXPECT_EQ(Instead("max-threads", "16"), "use -o fuse.threads=16");
  EXPECT_EQ(Instead("prefetch", "x"), "use -o cache.prefetch=N");
  EXPECT_EQ(Instead("log-level", "DEBUG"), "use -o log.level=debug");
  EXPECT_EQ(Instead("log-level", "NOTICE"), "use -o log.level=info");
  EXPECT_EQ(Instead("metadata-ttl", "indefinite"), "use -o cache.consistency=immutable");
  EXPECT_EQ(Instead("metadata-ttl", "60"), "use -o cache.consistency=open");
  EXPECT_EQ(Instead("allow-other", ""), "use -o allow_other");
  EXPECT_EQ(Instead("auto-unmount", ""), "use -o auto_unmount");
  EXPECT_NE(Instead("read-only", "").find("always read-only"), std::string::npos);
  EXPECT_NE(Instead("cache-dir", "/ssd").find("-o cache.memory=SIZE"), std::string::npos);
}

TEST(OptionHints, WhichTakeAValue) {
  EXPECT_TRUE(HintedOptionTakesValue("cache-size"));
  EXPECT_TRUE(HintedOptionTakesValue("cache-dir"));
  EXPECT_TRUE(HintedOptionTakesValue("metadata-ttl"));
  EXPECT_FALSE(HintedOptionTakesValue("allow-other"));
  EXPECT_FALSE(HintedOptionTakesValue("read-only"));
  EXPECT_FALSE(HintedOptionTakesValue("daemon"));
  EXPECT_FALSE(HintedOptionTakesValue("not-an-option"));
}

TEST(OptionHints, UnknownNamesAndEpochfsOwnOptionsGetNone) {
  EXPECT_FALSE(HintForOption("no-such-option", "1").has_value());
  EXPECT_FALSE(HintForOption("config", "x").has_value());
  EXPECT_FALSE(HintForOption("foreground", "").has_value());
  EXPECT_FALSE(HintForOption("cache.memory", "1G").has_value());
  EXPECT_FALSE(HintForOption("", "").has_value());
}

// Every suggestion with a concrete value is one that -o accepts as written.
TEST(OptionHints, SuggestionsAreAcceptedByOverrides) {
  const std::pair<std::string_view, std::string_view> typed[] = {
      {"cache-size", "1G"},        {"max-cache-size", "2048"}, {"vfs-cache-max-size", "10G"},
      {"attr-cache", "1s"},        {"entry-cache", "2"},        {"attr-timeout", "1s"},
      {"dir-cache-time", "5m"},    {"max-threads", "16"},       {"prefetch", "4"},
      {"log-level", "INFO"},       {"log-level", "warning"},    {"metadata-ttl", "indefinite"},
      {"metadata-ttl", "0"},
  };
  for (const auto& [name, value] : typed) {
    std::string instead = Instead(name, value);
    ASSERT_EQ(instead.rfind("use -o ", 0), 0u) << instead;
    std::string kv = instead.substr(7);
    size_t eq = kv.find('=');
    ASSERT_NE(eq, std::string::npos) << instead;
    ASSERT_TRUE(IsConfigKey(kv.substr(0, eq))) << instead;
    Config c;
    EXPECT_TRUE(ApplyOverride(&c, kv.substr(0, eq), kv.substr(eq + 1)).ok()) << instead;
  }
}

}  // namespace option_hints_test
}  // namespace epochfs
