// Query files built to hang or exhaust the compiler (issue 17): each must end quickly, with a
// result or an error. Timings are generous bounds (a slow shared machine, sanitizer builds);
// before the fixes these inputs took minutes or never ended.
#include <doctest/doctest.h>

#include <ctime>
#include <string>

#include "support/check_helpers.h"

using namespace bpfql;
using testing::check_error;

namespace {

// CPU seconds, not wall time: the machine running the tests may be busy.
double seconds_for(const std::string& yaml, std::string* error = nullptr) {
  std::clock_t start = std::clock();
  std::string e = check_error(yaml);
  if (error) *error = e;
  return static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
}

// Nine levels of ten aliases: 10^9 paths through the tree, 639 bytes of text.
std::string alias_levels(int levels, int width) {
  std::string yaml = "x0: &a0 [1]\n";
  for (int level = 1; level <= levels; ++level) {
    yaml += "x" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < width; ++i)
      yaml += (i ? ", *a" : "*a") + std::to_string(level - 1);
    yaml += "]\n";
  }
  return yaml;
}

}  // namespace

TEST_CASE("YAML alias bombs next to a call with commas end at once") {
  // The comma in lhist(...) inside a flow list makes the loader restore hidden commas in every
  // scalar of the tree; it once followed each alias as if it were a copy.
  const std::string query =
      "probe: tracepoint:syscalls:sys_enter_read\nselect: [count(), lhist(args.count, 0, 100, 10)]\n";
  std::string error;
  CHECK(seconds_for("x: &a [*a, *a]\n" + query, &error) < 2.0);
  CHECK(error.find("x") != std::string::npos);  // an unknown key, said at once
  CHECK(seconds_for(alias_levels(9, 10) + query, &error) < 2.0);
  CHECK(error != "");
  // A self-referencing alias where the loader reads a value.
  CHECK(seconds_for("probe: tracepoint:syscalls:sys_enter_read\nselect: &s [count(), "
                    "lhist(args.count, 0, 100, 10), *s]\n",
                    &error) < 2.0);
  CHECK(error != "");
}

TEST_CASE("one long expression line is linear, not quadratic") {
  // `where: x x x ...`: a run of spaces once rescanned the whole laid-out text.
  std::string words;
  words.reserve(1 << 20);
  while (words.size() < (1u << 20)) words += "x ";
  std::string error;
  double took = seconds_for(
      "probe: tracepoint:syscalls:sys_enter_read\nwhere: " + words + "\nselect: count()\n", &error);
  CHECK(took < 5.0);
  CHECK(error.rfind("2:", 0) == 0);  // a syntax error on the where line
}

TEST_CASE("the kernel's 64 programs per tracepoint: a file that needs more is refused at check") {
  auto queries = [](int n) {
    std::string yaml = "queries:\n";
    for (int i = 0; i < n; ++i)
      yaml += "  - name: q" + std::to_string(i) +
              "\n    probe: tracepoint:syscalls:sys_enter_read\n    select: count()\n";
    return yaml;
  };
  CHECK(check_error(queries(64)) == "");
  std::string error = check_error(queries(65));
  // At the probe of the 65th query (line 2 + 3 * 64 + 1).
  CHECK(error.rfind("195:", 0) == 0);
  CHECK(error.find("65 programs") != std::string::npos);
  CHECK(error.find("64 the kernel allows on one tracepoint") != std::string::npos);
  // A wildcard counts for every tracepoint it matches; other tracepoints are not affected.
  std::string mixed = queries(64) +
                      "  - name: other\n    probe: tracepoint:syscalls:sys_enter_write\n"
                      "    select: count()\n";
  CHECK(check_error(mixed) == "");
}

TEST_CASE("interval has a floor, query names a length limit") {
  const std::string query = "probe: tracepoint:syscalls:sys_enter_read\nselect: count()\n";
  CHECK(check_error(query + "interval: 100ms\n") == "");
  CHECK(check_error(query + "interval: 1ns\n") ==
        "3:11: 'interval' must be at least 100ms (each print reads every map)");
  CHECK(check_error(query + "interval: 99ms\n") != "");
  CHECK(check_error(query + "stop_after: 1ms\n") == "");  // ends the run once: no floor
  CHECK(check_error("name: " + std::string(64, 'a') + "\n" + query) == "");
  CHECK(check_error("name: " + std::string(65, 'a') + "\n" + query) ==
        "1:7: a query name is at most 64 characters; this one has 65");
}

TEST_CASE("string comparisons beyond what one BPF program holds are refused at check") {
  auto in_list = [](int items, int length) {
    std::string list;
    for (int i = 0; i < items; ++i)
      list += (i ? ", \"" : "\"") + std::string(static_cast<size_t>(length), char('a' + i % 26)) + "\"";
    return "probe: tracepoint:syscalls:sys_enter_openat\nstrlen: 256\nwhere: str(args.filename) in (" +
           list + ")\nselect: count()\n";
  };
  // 32 strings of 200 bytes: accepted before, then the compile failed after minutes.
  std::string error = check_error(in_list(32, 200));
  CHECK(error.rfind("3:8: the query compares 6432 bytes of string literals, more than the 4096", 0) == 0);
  CHECK(check_error(in_list(16, 255)) == "");  // 4096 bytes: compiles (measured)
  CHECK(check_error(in_list(64, 63)) == "");
  // The budget is the query's: comparisons add up across its where items.
  std::string many = "probe: tracepoint:syscalls:sys_enter_openat\nstrlen: 256\nwhere:\n";
  for (int i = 0; i < 20; ++i)
    many += "  - str(args.filename) != \"" + std::string(250, char('a' + i)) + "\"\n";
  many += "select: count()\n";
  CHECK(check_error(many).find("more than the 4096") != std::string::npos);
}
