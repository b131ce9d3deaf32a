// Option hints: the options that users of other dataset mounts (JuiceFS,
// rclone mount, mountpoint-s3) type out of habit, each mapped to what epochfs
// takes instead, so that `epochfs --cache-size 1G ...` fails with one line
// that says `-o cache.memory=1GiB` rather than a bare "unknown option".
//
// One table (option_hints.cc); a hint names a config key (IsConfigKey holds
// for every one of them, tests/unit/config/option_hints_test.cc) or a FUSE
// option, or says that epochfs has nothing to set. Pure functions over a
// constant table; thread safety: none needed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace epochfs {

struct OptionHint {
  std::string tool;     // where the habit comes from ("JuiceFS", "rclone", ...)
  std::string instead;  // what to write instead ("-o cache.memory=1GiB"), or
                        // what epochfs does ("nothing: the view is read-only")
};

// The hint for `name` as typed, without leading dashes ("cache-size";
// '_' and '-' are the same), given its value ("1G"; empty when none was
// given: the hint then shows the key with a placeholder). nullopt when
// `name` is not one of the look-alikes.
std::optional<OptionHint> HintForOption(std::string_view name, std::string_view value);

// Whether the look-alike `name` takes a value (`--cache-size 1G` consumes
// "1G"; `--allow-other` takes none). False for a name that is not one.
bool HintedOptionTakesValue(std::string_view name);

}  // namespace epochfs
