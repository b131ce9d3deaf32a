// Helpers shared by the control unit tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

// Substring check with a readable failure (no gmock dependency).
#define EXPECT_CONTAINS(haystack, needle)                                   \
  do {                                                                      \
    const std::string h_ = (haystack);                                      \
    EXPECT_NE(h_.find(needle), std::string::npos) << "message: " << h_;     \
  } while (0)
