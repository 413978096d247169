// The original BPFQL format (shape c), unchanged: `from`, where lists with word operators, bare
// tracepoint field names. It has no params, so each test writes its file with the pid in it.
//
// BPFQL's own streaming example selects `got_bits` from tracepoint:random:urandom_read; kernels
// since 5.18 have no random:* tracepoints (this one has none), so the same shape runs on
// syscalls:sys_exit_read with its bare field `ret`.
#include <signal.h>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

// Shape (c) with one query: the name is the file's stem, possibly with "-1"; take either.
std::vector<json> records_named_like(const TraceRun& run, const std::string& stem) {
  std::vector<json> found;
  for (const json& r : run.records) {
    std::string q = r.value("query", "");
    if (q == stem || q == stem + "-1") found.push_back(r);
  }
  return found;
}

// These legacy files filter on comm and group by pid; the test reads its own workload's row.
TEST_CASE("BPFQL shape: count() from a tracepoint, where list with `is`, group_by comm") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string file = dir.write("legacy-count.yml", R"(BPFQL:
- select: count()
  from: tracepoint:syscalls:sys_enter_getppid
  group_by: pid
  where:
    - comm is "bpfql-wl"
  interval: 15s
)");
  TraceRun run = trace({.queries = {file}, .workload = {"getppid", "640"}, .pass_pid = false});
  CHECK(run.status.exited_with(0));
  std::vector<json> prints = records_named_like(run, "legacy-count");
  INFO("stdout:\n" << run.out);
  REQUIRE(!prints.empty());
  json row = row_where(prints.back()["rows"], {{"pid", run.workload_pid}});
  CHECK(as_int(row["count()"]) == 640);
}

TEST_CASE("BPFQL shape: an unquoted word after `is` is a string") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string file = dir.write("legacy-word.yml", R"(BPFQL:
- select: count()
  from: tracepoint:syscalls:sys_enter_getppid
  group_by: [comm, pid]
  where:
    - comm is bpfql-wl
)");
  TraceRun run = trace({.queries = {file}, .workload = {"getppid", "64"}, .pass_pid = false});
  std::vector<json> prints = records_named_like(run, "legacy-word");
  INFO("stdout:\n" << run.out);
  REQUIRE(!prints.empty());
  json row = row_where(prints.back()["rows"], {{"pid", run.workload_pid}});
  CHECK(row["comm"] == "bpfql-wl");
  CHECK(as_int(row["count()"]) == 64);
}

TEST_CASE("BPFQL shape: select [pid, ts, comm, FIELD] streams events, word operators filter") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string file = dir.write("legacy-stream.yml", R"(BPFQL:
- select: [pid, ts, comm, ret]
  from: tracepoint:syscalls:sys_exit_read
  where:
    - comm is "bpfql-wl"
    - ret gteq 200
    - ret lt 300
)");
  TraceRun run = trace({.queries = {file},
                        .workload = {"read", "10", "100", "read", "25", "200", "read", "10", "300"},
                        .pass_pid = false});
  std::vector<json> events;
  for (const json& e : records_named_like(run, "legacy-stream"))
    if (e.value("pid", int64_t{-1}) == run.workload_pid) events.push_back(e);
  INFO("stdout:\n" << run.out);
  CHECK(events.size() == 25);
  for (const json& e : events) {
    CHECK(e["comm"] == "bpfql-wl");
    CHECK(as_int(e["ret"]) == 200);
    CHECK(as_int(e["ts"]) > 0);
  }
}

TEST_CASE("BPFQL shape: `pid is N` with the pid written into the file") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  // The file must hold the workload's pid, known only once the workload runs, so this test
  // drives the steps itself instead of through trace().
  Process workload = Process::spawn({BPFQL_WORKLOAD, "getppid", "555"});
  std::string file = dir.write("legacy-pid.yml", R"(BPFQL:
- select: count()
  from: tracepoint:syscalls:sys_enter_getppid
  group_by: comm
  where:
    - pid is )" + std::to_string(workload.pid()) + R"(
    - comm is "bpfql-wl"
  stop_after: "30s"
)");
  Process bpfql = Process::spawn({BPFQL_BINARY, "run", file, "-f", "json"});
  INFO("bpfql stderr:\n" << bpfql.err());
  REQUIRE(bpfql.wait_for_stderr("Tracing", milliseconds(30000)));
  REQUIRE(workload.write_stdin("go\n"));
  std::optional<ExitStatus> done = workload.wait(milliseconds(30000));
  REQUIRE(done.has_value());
  REQUIRE(done->exited_with(0));
  bpfql.signal(SIGINT);
  std::optional<ExitStatus> status = bpfql.wait(milliseconds(30000));
  REQUIRE(status.has_value());
  CHECK(status->exited_with(0));
  TraceRun run;
  run.out = bpfql.out();
  for (const std::string& line : split_lines(run.out))
    if (!line.empty()) run.records.push_back(json::parse(line));
  std::vector<json> prints = records_named_like(run, "legacy-pid");
  INFO("stdout:\n" << run.out);
  REQUIRE(!prints.empty());
  json rows = prints.back()["rows"];
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["comm"] == "bpfql-wl");
  CHECK(as_int(rows[0]["count()"]) == 555);
}

}  // namespace
}  // namespace bpfql::test
