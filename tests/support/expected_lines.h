// Whole-line checks on command output (Prometheus text, tables): a line is found only as a line,
// never as part of a longer one.
#pragma once

#include <doctest/doctest.h>

#include <string>

namespace bpfql::testing {

inline bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace bpfql::testing

#define CHECK_LINE(text, line)                                              \
  do {                                                                      \
    INFO("expected line: " << (line) << "\nin:\n" << (text));               \
    CHECK(::bpfql::testing::has_line((text), (line)));                      \
  } while (0)
