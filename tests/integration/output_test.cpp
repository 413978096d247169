// What bpfql prints: several queries in one file, interval prints, cumulative maps, streamed
// events, and the csv and table formats.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

TEST_CASE("a multi-query file prints each query under its own name") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("multi.yml")}, .workload = {"mixed", "300", "2000"}});
  json calls = final_rows(run, "calls");
  json bytes = final_rows(run, "bytes");
  REQUIRE(calls.size() == 1);
  REQUIRE(bytes.size() == 1);
  CHECK(as_int(calls[0]["calls"]) == 300);
  CHECK(as_int(bytes[0]["bytes"]) == 300 * 2000);
  for (const json& r : run.records) {
    INFO("record: " << r.dump());
    CHECK((r["query"] == "calls" || r["query"] == "bytes"));
  }
}

TEST_CASE("two query files given to one run") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("getppid-count.yml"), query_file("read-bytes.yml")},
                        .workload = {"mixed", "50", "100"}});
  CHECK(as_int(final_rows(run, "getppid-count")[0]["count()"]) == 50);
  CHECK(as_int(final_rows(run, "read-bytes")[0]["bytes"]) == 50 * 100);
}

int64_t total_calls(const std::vector<json>& prints) {
  int64_t total = 0;
  for (const json& p : prints)
    for (const json& row : p["rows"]) total += as_int(row["calls"]);
  return total;
}

TEST_CASE("interval: 1s prints several times and the prints add up to every call") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("interval.yml")}, .workload = {"getppid-paced", "300", "3000"}});
  CHECK(run.status.exited_with(0));
  std::vector<json> prints = intervals_of(run, "interval");
  INFO("stdout:\n" << run.out);
  CHECK(prints.size() >= 3);
  CHECK(total_calls(prints) == 300);
  for (const json& p : prints) {
    CHECK(p.contains("time"));
    CHECK(p["time"].is_string());
    CHECK(as_int(p["dropped"]) == 0);
    CHECK(as_int(p["lost"]) == 0);
  }
  // Full intervals in the middle of the run cover about a second each.
  for (size_t i = 0; i + 1 < prints.size(); ++i) {
    CHECK(as_double(prints[i]["interval_s"]) == doctest::Approx(1.0).epsilon(0.25));
  }
}

TEST_CASE("--interval on the command line overrides a query without one") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("getppid-count.yml")},
                        .workload = {"getppid-paced", "200", "2500"},
                        .extra_args = {"--interval", "500ms"}});
  std::vector<json> prints = intervals_of(run, "getppid-count");
  INFO("stdout:\n" << run.out);
  CHECK(prints.size() >= 4);
  int64_t total = 0;
  for (const json& p : prints)
    for (const json& row : p["rows"]) total += as_int(row["count()"]);
  CHECK(total == 200);
}

TEST_CASE("cumulative: true keeps counting across prints") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("cumulative.yml")}, .workload = {"getppid-paced", "200", "2000"}});
  std::vector<json> prints = intervals_of(run, "cumulative");
  INFO("stdout:\n" << run.out);
  REQUIRE(prints.size() >= 3);
  int64_t previous = 0;
  for (const json& p : prints) {
    int64_t now = p["rows"].empty() ? 0 : as_int(p["rows"][0]["calls"]);
    CHECK(now >= previous);
    previous = now;
  }
  CHECK(previous == 200);
}

TEST_CASE("select of plain values streams one record per event") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("stream-read.yml")}, .workload = {"read", "200", "1000"}});
  std::vector<json> events = events_of(run, "stream-read");
  INFO("stdout:\n" << run.out);
  CHECK(events.size() == 200);
  for (const json& e : events) {
    CHECK(as_int(e["pid"]) == run.workload_pid);
    CHECK(e["comm"] == "bpfql-wl");
    CHECK(as_int(e["retval"]) == 1000);
    // Per-CPU buffers: events of a migrating thread may arrive out of order, so no order check.
    CHECK(as_int(e["ts"]) > 0);
  }
}

TEST_CASE("limit on a stream without interval: that many events for the whole run, the rest counted") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("stream-limit.yml")}, .workload = {"getppid", "1000"}});
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  std::vector<json> events = events_of(run, "stream-limit");
  CHECK(events.size() == 5);
  for (const json& e : events) CHECK(as_int(e["pid"]) == run.workload_pid);
  // JSON lines stay events; the count is a note on stderr, once.
  std::string note = "bpfql: stream-limit: 995 more events not printed (limit 5)\n";
  CHECK(run.err.find(note) != std::string::npos);
  CHECK(run.err.find(note) == run.err.rfind(note));
}

TEST_CASE("limit on a stream with interval: exactly that many rows per window, the rest counted") {
  BPFQL_REQUIRE_ROOT();
  // Three bursts of 100 calls, 700 ms apart: each lands in a 500 ms window of its own.
  TraceRun run = trace({.queries = {query_file("stream-limit-interval.yml")},
                        .workload = {"getppid", "100", "sleep", "700", "getppid", "100", "sleep",
                                     "700", "getppid", "100"},
                        .format = "table"});
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  // Event rows ("18:22:15.728864  4242"), counted per window; a window that held events back
  // ends with "... N more events not printed (limit 3)".
  std::vector<int> rows_per_window{0};
  std::vector<int> not_printed;
  for (const std::string& line : split_lines(run.out)) {
    std::istringstream words(line);
    std::string ts;
    int64_t pid = 0;
    if (line.starts_with("... ")) {
      int n = 0;
      // "... QUERY: N more events not printed (limit 3)": the note names its query.
      CHECK(line.starts_with("... stream-limit-interval: "));
      std::istringstream(line.substr(line.find(": ") + 2)) >> n;
      CHECK(line.ends_with(" more events not printed (limit 3)"));
      not_printed.push_back(n);
      rows_per_window.push_back(0);
    } else if (words >> ts >> pid && ts.find('.') != std::string::npos) {
      CHECK(pid == run.workload_pid);
      ++rows_per_window.back();
    }
  }
  CHECK(not_printed == std::vector<int>{97, 97, 97});
  CHECK(rows_per_window == std::vector<int>{3, 3, 3, 0});
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

// The spec fixes "a header line, then rows"; leading columns such as query and time are allowed,
// the row's own columns come last.
TEST_CASE("-f csv: a header line, then the row") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("count-by-comm.yml")}, .workload = {"getppid", "123"}, .format = "csv"});
  CHECK(run.status.exited_with(0));
  std::vector<std::string> lines = split_lines(run.out);
  std::erase(lines, "");
  INFO("stdout:\n" << run.out);
  REQUIRE(lines.size() == 2);
  std::vector<std::string> header = csv_fields(lines[0]);
  std::vector<std::string> row = csv_fields(lines[1]);
  REQUIRE(header.size() >= 2);
  CHECK(row.size() == header.size());
  CHECK(std::vector<std::string>(header.end() - 2, header.end()) == std::vector<std::string>{"comm", "count()"});
  CHECK(std::vector<std::string>(row.end() - 2, row.end()) == std::vector<std::string>{"bpfql-wl", "123"});
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "query") CHECK(row[i] == "count-by-comm");
  }
}

TEST_CASE("-f table (the default): the row holds the comm and the exact count") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("count-by-comm.yml")}, .workload = {"getppid", "4567"}, .format = "table"});
  CHECK(run.status.exited_with(0));
  INFO("stdout:\n" << run.out);
  bool found = false;
  for (const std::string& line : split_lines(run.out)) {
    std::istringstream words(line);
    std::vector<std::string> cells;
    for (std::string w; words >> w;)
      if (w != "|") cells.push_back(w);
    if (std::find(cells.begin(), cells.end(), "bpfql-wl") != cells.end() &&
        std::find(cells.begin(), cells.end(), "4,567") != cells.end())  // aggregates: separators
      found = true;
  }
  CHECK_MESSAGE(found, "no table line holds both 'bpfql-wl' and '4,567'");
  CHECK(run.out.find("count()") != std::string::npos);
}

TEST_CASE("-o FILE writes the output to the file, not to stdout") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string out_file = dir.file("out.ndjson");
  TraceRun run = trace({.queries = {query_file("getppid-count.yml")}, .workload = {"getppid", "99"},
                        .extra_args = {"-o", out_file}});
  CHECK(run.status.exited_with(0));
  CHECK(run.records.empty());
  std::ifstream in(out_file);
  REQUIRE_MESSAGE(in.good(), "-o did not create " << out_file);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  json record = json::parse(last, nullptr, false);
  INFO("last line of " << out_file << ": " << last);
  REQUIRE(record.is_object());
  CHECK(record["query"] == "getppid-count");
  CHECK(as_int(record["rows"][0]["count()"]) == 99);
}

}  // namespace
}  // namespace bpfql::test
