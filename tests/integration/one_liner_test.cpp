// The SQL one-liner and -c on the real kernel: exact counts from -e queries (filters, LIKE, a
// JOIN), and from -c: the command and the process it forks are counted, nothing else is.
#include <doctest/doctest.h>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

constexpr milliseconds kTimeout{30000};

int64_t single_count(const TraceRun& run, const std::string& query, const std::string& column) {
  json rows = final_rows(run, query);
  REQUIRE_MESSAGE(rows.size() == 1, "rows: " << rows.dump());
  return as_int(rows[0][column]);
}

// A process held on its stdin (as the workloads are), released later.
Process held(const std::vector<std::string>& argv) { return Process::spawn(argv); }


}  // namespace

TEST_CASE("-e: exact counts from SQL one-liners (WHERE, $param, LIKE)") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.workload = {"getppid", "1234"},
                        .extra_args = {"-e",
                                       "SELECT count() AS calls FROM "
                                       "tracepoint:syscalls:sys_enter_getppid WHERE pid = $pid; "
                                       "SELECT comm, count() AS calls FROM "
                                       "t:syscalls:sys_enter_getppid WHERE comm LIKE 'bpfql-w%' "
                                       "AND pid = $pid GROUP BY comm"}});
  CHECK(run.status.exited_with(0));
  CHECK(single_count(run, "query-1", "calls") == 1234);
  json rows = final_rows(run, "query-2");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["comm"] == "bpfql-wl");
  CHECK(as_int(rows[0]["calls"]) == 1234);
}

TEST_CASE("-e: a JOIN is a span: exact count and begin/end filters") {
  BPFQL_REQUIRE_ROOT();
  // 40 reads of 100 bytes from /dev/zero: 40 spans; the begin filter keeps this process's reads,
  // the end filter those that returned 100 bytes.
  TraceRun run = trace({.workload = {"read", "40", "100"},
                        .extra_args = {"-e",
                                       "SELECT count() AS reads, max(duration) AS longest FROM "
                                       "t:syscalls:sys_enter_read AS b JOIN "
                                       "t:syscalls:sys_exit_read AS e ON b.tid = e.tid WHERE "
                                       "b.pid = $pid AND e.retval = 100"}});
  CHECK(run.status.exited_with(0));
  CHECK(single_count(run, "query", "reads") == 40);
}

TEST_CASE("-c: the command and its child are counted, other processes are not") {
  BPFQL_REQUIRE_ROOT();
  constexpr int n = 300, m = 170, outside = 500;
  // Another process making the same calls while bpfql traces: none of them may be counted.
  Process other = held({BPFQL_WORKLOAD, "getppid", std::to_string(outside)});
  Process bpfql = Process::spawn(
      {BPFQL_BINARY, "run", "-f", "json", "-e",
       "SELECT count() AS calls FROM tracepoint:syscalls:sys_enter_getppid", "-c",
       std::string(BPFQL_WORKLOAD) + " getppid " + std::to_string(n) + " child-getppid " +
           std::to_string(m) + " sleep 500"});
  bpfql.close_stdin();  // the command inherits it: EOF releases its own wait at once
  REQUIRE_MESSAGE(bpfql.wait_for_stderr("Tracing", kTimeout), "stderr: " << bpfql.err());
  other.write_stdin("go\n");
  auto other_status = other.wait(kTimeout);
  REQUIRE(other_status.has_value());
  CHECK(other_status->exited_with(0));
  auto status = bpfql.wait(kTimeout);  // ends on its own when the command exits
  REQUIRE(status.has_value());
  INFO("stderr: " << bpfql.err());
  CHECK(status->exited_with(0));
  CHECK(bpfql.err().find("exited with status 0") != std::string::npos);
  CHECK(bpfql.out().find("done getppid " + std::to_string(n)) != std::string::npos);
  // The last record is the final print.
  size_t at = bpfql.out().rfind("{\"query\"");
  REQUIRE(at != std::string::npos);
  json last = json::parse(bpfql.out().substr(at, bpfql.out().find('\n', at) - at));
  REQUIRE(last["rows"].size() == 1);
  CHECK(as_int(last["rows"][0]["calls"]) == n + m);
}

TEST_CASE("-c on a uprobe: the command's calls, not another process's of the same binary") {
  BPFQL_REQUIRE_ROOT();
  constexpr int n = 120, outside = 80;
  Process other = held({BPFQL_UPROBE_TARGET, std::to_string(outside)});
  Process bpfql = Process::spawn(
      {BPFQL_BINARY, "run", "-f", "json", "-e",
       std::string("SELECT count() AS calls, sum(arg0) AS a FROM uprobe:") + BPFQL_UPROBE_TARGET +
           ":bpfql_target_add",
       "-c", std::string(BPFQL_UPROBE_TARGET) + " " + std::to_string(n) + " 500"});
  bpfql.close_stdin();
  REQUIRE_MESSAGE(bpfql.wait_for_stderr("Tracing", kTimeout), "stderr: " << bpfql.err());
  other.write_stdin("go\n");
  REQUIRE(other.wait(kTimeout).has_value());
  auto status = bpfql.wait(kTimeout);
  REQUIRE(status.has_value());
  INFO("stderr: " << bpfql.err());
  CHECK(status->exited_with(0));
  size_t at = bpfql.out().rfind("{\"query\"");
  REQUIRE(at != std::string::npos);
  json last = json::parse(bpfql.out().substr(at, bpfql.out().find('\n', at) - at));
  REQUIRE(last["rows"].size() == 1);
  CHECK(as_int(last["rows"][0]["calls"]) == n);
  CHECK(as_int(last["rows"][0]["a"]) == int64_t{n} * (n - 1) / 2);
}

}  // namespace bpfql::test
