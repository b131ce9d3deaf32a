// libFuzzer target: `epochfs plan` model files and `epochfs sim` workload
// files (both TOML). The first byte picks which. Checked: parsing is
// deterministic, and an error always says what is wrong.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "epochfs/plan/model_file.h"
#include "epochfs/sim/workload.h"
#include "fuzz_check.h"

using namespace epochfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    auto m = plan::ParseModelFile(text, "fuzz.toml");
    auto again = plan::ParseModelFile(text, "fuzz.toml");
    FUZZ_CHECK(m.ok() == again.ok());
    if (!m.ok()) FUZZ_CHECK(!m.status().message().empty());
  } else {
    auto w = sim::ParseWorkload(text, "fuzz.toml");
    auto again = sim::ParseWorkload(text, "fuzz.toml");
    FUZZ_CHECK(w.ok() == again.ok());
    if (!w.ok()) FUZZ_CHECK(!w.status().message().empty());
  }
  return 0;
}
