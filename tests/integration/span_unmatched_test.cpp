// `unmatched: keep` on the real kernel: a workload makes reads of which only some begin a span
// (begin_where), and every read's end is recorded, the unmatched ones with no duration and no
// begin value (JSON null, never 0), in thread storage and in a hash; an aggregate counts them
// all; without keep they are not recorded.
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

TEST_CASE("unmatched: keep records every end, and those without a begin have no duration") {
  BPFQL_REQUIRE_ROOT();
  // 5 reads of 100 bytes (no begin: begin_where wants 4096), then 3 of 4096 (a begin each).
  TraceRun run = trace({.queries = {query_file("span-unmatched.yml")},
                        .workload = {"read", "5", "100", "read", "3", "4096"}});
  CHECK(run.status.exited_with(0));
  INFO("stderr:\n" << run.err);
  for (const char* query : {"unmatched-tid", "unmatched-pid"}) {
    std::vector<json> events = events_of(run, query);
    INFO(query << ": " << json(events).dump());
    REQUIRE(events.size() == 8);
    for (size_t i = 0; i < events.size(); ++i) {
      const json& e = events[i];
      if (i < 5) {  // in the workload's order: the reads without a begin first
        CHECK(as_int(e["retval"]) == 100);
        CHECK(e.contains("duration"));
        CHECK(e["duration"].is_null());
        CHECK(e["asked"].is_null());
      } else {
        CHECK(as_int(e["retval"]) == 4096);
        CHECK(as_int(e["asked"]) == 4096);
        CHECK(as_int(e["duration"]) > 0);
        CHECK(as_int(e["duration"]) < 10'000'000'000);
      }
    }
  }
  json rows = final_rows(run, "unmatched-count");
  INFO("unmatched-count: " << rows.dump());
  REQUIRE(rows.size() == 2);
  CHECK(as_int(row_where(rows, {{"retval", 100}})["reads"]) == 5);
  CHECK(as_int(row_where(rows, {{"retval", 4096}})["reads"]) == 3);
  // Without keep, only the 3 ends that found their begin.
  std::vector<json> dropped = events_of(run, "unmatched-drop");
  REQUIRE(dropped.size() == 3);
  for (const json& e : dropped) {
    CHECK(as_int(e["retval"]) == 4096);
    CHECK(as_int(e["duration"]) > 0);
  }
}

TEST_CASE("unmatched: keep in a table and in CSV: absent, not 0") {
  BPFQL_REQUIRE_ROOT();
  for (const char* format : {"table", "csv"}) {
    TraceRun run = trace({.queries = {query_file("span-unmatched.yml")},
                          .workload = {"read", "2", "100", "read", "1", "4096"},
                          .format = format});
    CHECK(run.status.exited_with(0));
    INFO(format << " output:\n" << run.out << "\nstderr:\n" << run.err);
    std::vector<std::string> kept;  // the lines of unmatched-tid's reads of 100 bytes
    size_t at = 0;
    while (at < run.out.size()) {
      size_t end = run.out.find('\n', at);
      if (end == std::string::npos) end = run.out.size();
      std::string line = run.out.substr(at, end - at);
      at = end + 1;
      bool ours = std::string(format) == "csv" ? line.rfind("unmatched-tid,", 0) == 0
                                               : line.find(" 100 ") != std::string::npos;
      if (ours && line.find("100") != std::string::npos && line.find("4096") == std::string::npos)
        kept.push_back(line);
    }
    if (std::string(format) == "csv") {
      // query,ts,retval,duration (ns),asked: the two begin values are empty fields.
      REQUIRE(kept.size() == 2);
      for (const std::string& line : kept) CHECK(line.substr(line.size() - 6) == ",100,,");
    } else {
      // Two streams print each such read (unmatched-tid, unmatched-pid): "TIME 100 bytes - -".
      REQUIRE(kept.size() == 4);
      for (const std::string& line : kept) {
        std::istringstream words(line);
        std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
        CHECK(w == std::vector<std::string>{w.at(0), "100", "bytes", "-", "-"});
      }
    }
  }
}

}  // namespace
}  // namespace bpfql::test
