// libFuzzer target: the job control parsers (control_parse.h). The first byte
// picks the parser; the rest is the file's content. Checked beyond "no crash":
// what a parser accepts meets its header's contract.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "epochfs/control/control_parse.h"
#include "fuzz_check.h"

using namespace epochfs;
using namespace epochfs::control;

#define CHECK FUZZ_CHECK

namespace {

void CheckPaths(const std::vector<std::string>& paths, bool unique) {
  CHECK(!paths.empty());
  std::set<std::string> seen;
  for (const std::string& p : paths) {
    CHECK(!p.empty());
    CHECK(p.find('\n') == std::string::npos);
    CHECK(p.front() != '/' && p.back() != '/');
    CHECK(p.find("//") == std::string::npos);
    // Normalised: no "." or ".." component.
    size_t b = 0;
    while (b <= p.size()) {
      size_t e = p.find('/', b);
      if (e == std::string::npos) e = p.size();
      std::string_view c(p.data() + b, e - b);
      CHECK(c != "." && c != "..");
      b = e + 1;
    }
    // Idempotent: a normalised path normalises to itself.
    Result<std::string> again = NormaliseRelativePath(p, PathKind::kFile);
    CHECK(again.ok() && again.value() == p);
    if (unique) CHECK(seen.insert(p).second);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (which % 8) {
    case 0: {
      Result<JobConfig> c = ParseJobConfig(text);
      if (c.ok()) {
        CHECK(c.value().batch_size > 0 && c.value().epochs > 0);
        // What reading `config` shows parses back to the same config.
        Result<JobConfig> again = ParseJobConfig(FormatJobConfig(c.value()));
        CHECK(again.ok() && again.value() == c.value());
      }
      break;
    }
    case 1: {
      Result<PathList> s = ParseSampleList(text);
      if (s.ok()) CheckPaths(s.value().ToStrings(), /*unique=*/true);
      break;
    }
    case 2: {
      Result<std::vector<std::string>> s = ParseSpillSchedule(text);
      if (s.ok()) CheckPaths(s.value(), /*unique=*/false);
      break;
    }
    case 3: {
      (void)ParseProgress(text);
      // `position`: what reading it shows ("K P\n") parses back the same.
      Result<PositionReport> r = ParsePosition(text);
      if (r.ok()) {
        CHECK(r.value().epoch < kMaxEpochs);
        const std::string shown =
            std::to_string(r.value().epoch) + " " + std::to_string(r.value().position) + "\n";
        Result<PositionReport> again = ParsePosition(shown);
        CHECK(again.ok() && again.value().epoch == r.value().epoch &&
              again.value().position == r.value().position);
      }
      break;
    }
    case 4: {
      // The sample count comes from the second byte (1..256) so that the
      // range and duplicate checks are reached.
      const size_t n = text.empty() ? 1 : static_cast<uint8_t>(text[0]) + 1;
      std::string_view body = text.empty() ? text : text.substr(1);
      Result<std::vector<uint32_t>> o = ParseOrder(body, n);
      if (o.ok()) {
        CHECK(!o.value().empty());
        std::set<uint32_t> seen;
        for (uint32_t i : o.value()) CHECK(i < n && seen.insert(i).second);
      }
      break;
    }
    case 5: {
      Result<uint32_t> e = ParseEpochMarker(text);
      if (e.ok()) CHECK(e.value() < kMaxEpochs);
      break;
    }
    case 6: {
      Result<uint32_t> k = ParseOrderFileName(text);
      if (k.ok()) CHECK(std::to_string(k.value()) == text && k.value() < kMaxEpochs);
      break;
    }
    case 7: {
      Result<std::vector<pid_t>> p = ParsePidList(text);
      if (p.ok()) {
        std::set<pid_t> seen;
        for (pid_t pid : p.value()) CHECK(pid >= 1 && pid <= kMaxPid && seen.insert(pid).second);
      }
      break;
    }
  }
  (void)QuoteForMessage(text);
  return 0;
}
