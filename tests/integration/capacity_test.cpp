// Capacity: a map that fills up (100,000 distinct keys against max_entries 10000) drops and
// counts what does not fit and still prints sorted, limited rows; a perf buffer that overflows
// (a consumer that stops reading) counts the events it lost, and every event is either
// delivered or counted; spans whose ends never arrive are bounded by max_entries.
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

std::vector<int64_t> ints(const json& rows, const char* column) {
  std::vector<int64_t> out;
  for (const json& row : rows) out.push_back(as_int(row[column]));
  return out;
}

TEST_CASE("100,000 distinct keys against max_entries 10000: dropped and counted, rows sorted and limited") {
  BPFQL_REQUIRE_ROOT();
  // Sizes 3 and 5 first (7 and 5 reads), then one read of every size 1..100000: the map fills
  // with sizes 1..10000 and the other 90000 sizes are dropped.
  TraceRun run = trace({.queries = {query_file("high-cardinality.yml")},
                        .workload = {"read", "7", "3", "read", "5", "5", "read-sizes", "100000"}});
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  std::vector<json> prints = intervals_of(run, "high-cardinality");
  REQUIRE(prints.size() == 1);
  const json& last = prints.back();
  CHECK(as_int(last["dropped"]) == 90000);
  json rows = last["rows"];
  INFO("rows: " << rows.dump());
  REQUIRE(rows.size() == 10);  // limit: 10
  // By count descending, then by key ascending.
  CHECK(ints(rows, "size") == std::vector<int64_t>{3, 5, 1, 2, 4, 6, 7, 8, 9, 10});
  CHECK(ints(rows, "reads") == std::vector<int64_t>{8, 6, 1, 1, 1, 1, 1, 1, 1, 1});
}

TEST_CASE("a full map: the table says how many map updates it refused") {
  BPFQL_REQUIRE_ROOT();
  TraceRun table = trace({.queries = {query_file("high-cardinality.yml")},
                          .workload = {"read-sizes", "12000"},
                          .format = "table"});
  INFO("table:\n" << table.out << "\nstderr:\n" << table.err);
  CHECK(table.status.exited_with(0));
  CHECK(table.out.find("dropped 2000 map updates (a map was full: raise max_entries)") !=
        std::string::npos);
}

// 50 children of the workload, 3 getppid() calls each, against max_entries 10: 10 keys stored,
// 40 keys dropped, and what is counted is their 120 refused updates (one per event), never
// called "keys" (it said "dropped 120 keys" once).
std::vector<std::string> fifty_children_three_calls() {
  std::vector<std::string> steps;
  for (int i = 0; i < 50; ++i) steps.insert(steps.end(), {"child-getppid", "3"});
  return steps;
}

TEST_CASE("50 keys x 3 events against max_entries 10: 120 refused updates, in JSON and the table") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("dropped-per-child.yml")},
                        .workload = fifty_children_three_calls()});
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  std::vector<json> prints = intervals_of(run, "dropped-per-child");
  REQUIRE(prints.size() == 1);
  INFO("record: " << prints.back().dump());
  CHECK(as_int(prints.back()["dropped"]) == 120);
  json rows = prints.back()["rows"];
  REQUIRE(rows.size() == 10);
  for (const json& row : rows) CHECK(as_int(row["calls"]) == 3);

  TraceRun table = trace({.queries = {query_file("dropped-per-child.yml")},
                          .workload = fifty_children_three_calls(),
                          .format = "table"});
  INFO("table:\n" << table.out << "\nstderr:\n" << table.err);
  CHECK(table.status.exited_with(0));
  CHECK(table.out.find("dropped 120 map updates (a map was full: raise max_entries)") !=
        std::string::npos);
  CHECK(table.out.find("keys") == std::string::npos);
}

// Sums "query NAME: lost N events" over bpfql's stderr.
uint64_t lost_reported(const std::string& err, const std::string& query) {
  std::regex line("query " + query + ": lost ([0-9]+) events");
  uint64_t total = 0;
  for (std::sregex_iterator it(err.begin(), err.end(), line), end; it != end; ++it)
    total += std::stoull((*it)[1].str());
  return total;
}

TEST_CASE("a perf buffer that overflows: lost events are counted, delivered + lost = all") {
  BPFQL_REQUIRE_ROOT();
  // The harness reads bpfql's stdout only after the workload: with 200,000 events at full
  // rate, the stdout pipe fills, bpfql blocks writing, and the perf buffers overflow.
  constexpr int64_t kEvents = 200000;
  TraceRun run = trace({.queries = {query_file("stream-getppid.yml")},
                        .workload = {"getppid", std::to_string(kEvents)}});
  CHECK(run.status.exited_with(0));
  uint64_t delivered = events_of(run, "stream-getppid").size();
  uint64_t lost = lost_reported(run.err, "stream-getppid");
  INFO("delivered " << delivered << ", lost " << lost << "\nstderr:\n" << run.err);
  CHECK(lost > 0);
  CHECK(delivered > 0);
  CHECK(delivered + lost == static_cast<uint64_t>(kEvents));
}

TEST_CASE("interval prints of a keyless count at full rate add up to every call") {
  BPFQL_REQUIRE_ROOT();
  // Ten prints a second while 3M getppid() calls run flat out: a print that zeroed the counter
  // after reading it would lose what arrived in between (~150 calls per print here).
  constexpr int64_t kCalls = 3000000;
  TraceRun run = trace({.queries = {query_file("getppid-count.yml")},
                        .workload = {"getppid", std::to_string(kCalls)},
                        .extra_args = {"--interval", "100ms"}});
  CHECK(run.status.exited_with(0));
  std::vector<json> prints = intervals_of(run, "getppid-count");
  int64_t total = 0;
  int with_calls = 0;
  for (const json& p : prints) {
    int64_t n = as_int(p["rows"][0]["count()"]);
    total += n;
    with_calls += n > 0;
  }
  INFO("prints: " << prints.size() << ", with calls: " << with_calls << "\nstderr:\n" << run.err);
  CHECK(with_calls >= 2);  // the calls spanned several prints
  CHECK(total == kCalls);
}

TEST_CASE("calls made just after an interval print are in the final print") {
  BPFQL_REQUIRE_ROOT();
  // The workload is released right after bpfql's first print and bpfql is stopped as soon as it
  // exits: the final read comes within milliseconds of that print, and still holds every call.
  TraceRun run = trace({.queries = {query_file("getppid-count.yml")},
                        .workload = {"getppid", "1000"},
                        .extra_args = {"--interval", "100ms"},
                        .while_tracing = [](Process& bpfql) {
                          REQUIRE(bpfql.wait_for_stdout("\"query\"", milliseconds(10000)));
                        }});
  CHECK(run.status.exited_with(0));
  int64_t total = 0;
  for (const json& p : intervals_of(run, "getppid-count"))
    if (!p["rows"].empty()) total += as_int(p["rows"][0]["count()"]);
  INFO("stdout:\n" << run.out);
  CHECK(total == 1000);
}

TEST_CASE("spans whose ends never arrive are bounded by max_entries, the rest counted") {
  BPFQL_REQUIRE_ROOT();
  // 1000 begins, each with its own key; no end ever matches; the begin map holds 100.
  TraceRun run = trace({.queries = {query_file("orphan-spans.yml")}, .workload = {"getppid", "1000"}});
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  std::vector<json> prints = intervals_of(run, "orphan-spans");
  REQUIRE(!prints.empty());
  const json& last = prints.back();
  INFO("record: " << last.dump());
  CHECK(as_int(last["dropped"]) == 900);
  REQUIRE(last["rows"].size() == 1);
  CHECK(as_int(last["rows"][0]["spans"]) == 0);
}

}  // namespace
}  // namespace bpfql::test
