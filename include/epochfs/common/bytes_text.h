// Byte counts as text, both ways: HumanBytes writes one for people,
// ParseBytes reads the size strings of the config, the planner's model files,
// the simulator's workloads and the command lines ("4GiB").
// Thread safety: none needed (pure).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "epochfs/common/status.h"

namespace epochfs {

// "123 B" (exact below 1 KiB), else "1.5 GiB" with `decimals` digits, in
// binary units (KiB .. EiB).
std::string HumanBytes(uint64_t bytes, int decimals = 1);

// "4GiB", "512MiB", "100k", "123" → bytes. Units are case-insensitive:
// B; k, KiB, M, MiB, G, GiB, T, TiB (1024-based); KB, MB, GB, TB (1000-based).
// A fraction is allowed with a unit ("1.5GiB") and rounds down to whole bytes.
// Optional blanks around the number and before the unit. Rejects negatives,
// overflow past 2^64-1, and anything else (InvalidArgument "bad size "TEXT":
// why"); 0 is a valid result here (callers decide whether it is allowed).
Result<uint64_t> ParseBytes(std::string_view text);

}  // namespace epochfs
