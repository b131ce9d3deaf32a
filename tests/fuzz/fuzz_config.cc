// libFuzzer target: the config file (TOML), `-o key=value` overrides and byte
// sizes. The first byte picks which; the rest is the text.
// Checked: a config that loads has a positive budget or "auto", and loading
// is deterministic; an override either applies or leaves the config as it
// was; a parsed size prints back to the same number of bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "epochfs/common/bytes_text.h"
#include "epochfs/config/config.h"
#include "fuzz_check.h"

using namespace epochfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0: {
      Result<Config> c = ParseConfig(text, "fuzz.toml");
      Result<Config> again = ParseConfig(text, "fuzz.toml");
      FUZZ_CHECK(c.ok() == again.ok());
      if (c.ok()) {
        FUZZ_CHECK(c.value() == again.value());
        FUZZ_CHECK(c.value().cache.memory_auto || c.value().cache.memory_bytes > 0);
      } else {
        FUZZ_CHECK(!c.status().message().empty());
      }
      break;
    }
    case 1: {
      const size_t eq = text.find('=');
      if (eq == std::string_view::npos) break;
      Config c;
      const Config before = c;
      Status s = ApplyOverride(&c, text.substr(0, eq), text.substr(eq + 1));
      if (!s.ok()) FUZZ_CHECK(c == before);
      (void)IsConfigKey(text.substr(0, eq));
      break;
    }
    case 2: {
      Result<uint64_t> b = ParseBytes(text);
      if (b.ok()) {
        Result<uint64_t> plain = ParseBytes(std::to_string(b.value()));
        FUZZ_CHECK(plain.ok() && plain.value() == b.value());
      }
      break;
    }
  }
  return 0;
}
