// HumanBytes: a byte count for people, in binary units: "123 B" (exact below
// 1 KiB), else "1.5 GiB" with `decimals` digits (KiB .. EiB).
// Thread safety: none needed (pure).
#pragma once

#include <cstdint>
#include <string>

namespace epochfs {

std::string HumanBytes(uint64_t bytes, int decimals = 1);

}  // namespace epochfs
