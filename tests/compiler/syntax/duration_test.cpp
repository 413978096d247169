// parse_duration: the duration syntax of query files and the command line.
#include <doctest/doctest.h>

#include "compiler/syntax/query.h"

using namespace bpfql;

TEST_CASE("durations: units and bare seconds") {
  struct Case {
    const char* text;
    uint64_t ns;
  };
  const Case cases[] = {
      {"250ms", 250'000'000},
      {"5s", 5'000'000'000},
      {"1m", 60'000'000'000},
      {"1h", 3'600'000'000'000},
      {"10us", 10'000},
      {"10\xc2\xb5s", 10'000},
      {"10ns", 10},
      {"5", 5'000'000'000},  // a bare integer is seconds
      {"0", 0},
      {"0s", 0},
      {"1.5s", 1'500'000'000},
      {"0.25m", 15'000'000'000},
      {"0.000000001s", 1},
      {"  30s \n", 30'000'000'000},
      {"18446744073709551615ns", 18'446'744'073'709'551'615ull},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    auto ns = parse_duration(c.text);
    REQUIRE(ns.has_value());
    CHECK(*ns == c.ns);
  }
}

TEST_CASE("durations: rejected forms") {
  const char* rejected[] = {
      "",
      "   ",
      "s",
      "ms",
      "-5s",
      "+5s",
      "5x",
      "5 s",
      "5sec",
      "1.5ns",
      ".5s",
      "5.s",
      "5S",
      "1e3",
      "0x10",
      "5s5",
      "5ss",
      "abc",
      "1.0000000000000000001s",  // more fraction digits than we keep
      "18446744073709551616ns",  // 2^64
      "5124096h",                // > 2^64 ns
      "99999999999999999999999",
  };
  for (const char* text : rejected) {
    CAPTURE(text);
    CHECK_FALSE(parse_duration(text).has_value());
  }
}
