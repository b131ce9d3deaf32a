// How values are written into error messages, the same in every module:
// QuoteText for a string a user gave, DoubleText for a number read from a file.
// Thread safety: none needed (pure).
#pragma once

#include <string>
#include <string_view>

namespace epochfs {

// `s` in double quotes: '"' and '\' escaped with '\', control bytes
// (below 0x20, and 0x7f) as "\xNN"; other bytes (UTF-8 among them) as they are.
std::string QuoteText(std::string_view s);

// The shortest text that reads back as `d` ("0.99", not "0.98999999999999999").
std::string DoubleText(double d);

}  // namespace epochfs
