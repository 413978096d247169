// Aggregates on the real kernel: the workload makes an exactly known set of system calls and
// every number bpfql prints must match it exactly.
#include <cmath>
#include <set>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"
#include "tests/integration/kernel_state.h"

namespace bpfql::test {
namespace {

TEST_CASE("count() of getppid calls is exact") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("getppid-count.yml")}, .workload = {"getppid", "1000"}});
  CHECK(run.status.exited_with(0));
  CHECK(run.workload_out == "done getppid 1000\n");
  json rows = final_rows(run, "getppid-count");
  REQUIRE(rows.size() == 1);
  CHECK(as_int(rows[0]["count()"]) == 1000);
}

TEST_CASE("a group_by key may be selected next to an aggregate") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("count-by-comm.yml")}, .workload = {"getppid", "500"}});
  json rows = final_rows(run, "count-by-comm");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["comm"] == "bpfql-wl");
  CHECK(as_int(rows[0]["count()"]) == 500);
}

TEST_CASE("count by comm and pid: group_by keys are columns") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("count-by-comm-pid.yml")}, .workload = {"getppid", "700"}});
  json rows = final_rows(run, "count-by-comm-pid");
  REQUIRE(rows.size() == 1);
  json row = row_where(rows, {{"comm", "bpfql-wl"}, {"pid", run.workload_pid}});
  CHECK(as_int(row["calls"]) == 700);
}

TEST_CASE("where comm == \"bpfql-wl\" keeps the workload's calls, per pid") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("comm-filter.yml")}, .workload = {"getppid", "321"},
                        .pass_pid = false});
  json rows = final_rows(run, "comm-filter");
  json row = row_where(rows, {{"pid", run.workload_pid}});
  CHECK(as_int(row["calls"]) == 321);
}

TEST_CASE("sum, min, max and avg of read() return values") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("read-bytes.yml")}, .workload = {"read", "1000", "1000"}});
  json rows = final_rows(run, "read-bytes");
  REQUIRE(rows.size() == 1);
  CHECK(as_int(rows[0]["reads"]) == 1000);
  CHECK(as_int(rows[0]["bytes"]) == 1000 * 1000);
  CHECK(as_int(rows[0]["smallest"]) == 1000);
  CHECK(as_int(rows[0]["largest"]) == 1000);
  CHECK(as_double(rows[0]["mean"]) == doctest::Approx(1000.0));
}

TEST_CASE("stats() gives count, avg and sum") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("read-stats.yml")}, .workload = {"read", "400", "1500"}});
  json rows = final_rows(run, "read-stats");
  REQUIRE(rows.size() == 1);
  json stats = rows[0]["stats(retval)"];
  INFO("stats(retval): " << stats.dump());
  CHECK(as_int(stats["count"]) == 400);
  CHECK(as_int(stats["sum"]) == 400 * 1500);
  CHECK(as_double(stats["avg"]) == doctest::Approx(1500.0));
}

// Buckets are {"min":A,"max":B,"count":N}, max exclusive; only the populated one may count.
void check_single_bucket(const json& buckets, int64_t min, int64_t max, int64_t count) {
  INFO("buckets: " << buckets.dump());
  REQUIRE(buckets.is_array());
  int64_t total = 0;
  int populated = 0;
  for (const json& b : buckets) {
    int64_t n = as_int(b["count"]);
    total += n;
    if (n == 0) continue;
    ++populated;
    CHECK(as_int(b["min"]) == min);
    CHECK(as_int(b["max"]) == max);
    CHECK(n == count);
  }
  CHECK(populated == 1);
  CHECK(total == count);
}

TEST_CASE("hist(): every read of 1000 bytes lands in [512, 1024)") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("read-hist.yml")}, .workload = {"read", "800", "1000"}});
  json rows = final_rows(run, "read-hist");
  REQUIRE(rows.size() == 1);
  check_single_bucket(rows[0]["hist(retval)"], 512, 1024, 800);
}

TEST_CASE("lhist(retval, 0, 4096, 512): reads of 1500 bytes land in [1024, 1536)") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("read-lhist.yml")}, .workload = {"read", "600", "1500"}});
  json rows = final_rows(run, "read-lhist");
  REQUIRE(rows.size() == 1);
  check_single_bucket(rows[0]["lhist(retval, 0, 4096, 512)"], 1024, 1536, 600);
}

TEST_CASE("percentile() is within the stated relative error of 1/16") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("read-percentile.yml")}, .workload = {"read", "500", "1000"}});
  json rows = final_rows(run, "read-percentile");
  REQUIRE(rows.size() == 1);
  json size = rows[0]["size"];
  INFO("size: " << size.dump());
  for (const char* p : {"p50", "p99"}) {
    double v = as_double(size[p]);
    CHECK(v >= 1000.0 * (1 - 1.0 / 16));
    CHECK(v <= 1000.0 * (1 + 1.0 / 16));
  }
}

TEST_CASE("percentile() of a point mass is that value, with no min()/max() selected") {
  BPFQL_REQUIRE_ROOT();
  // 500 reads of exactly 4096 bytes: the log-linear bucket is [4096, 4352), whose midpoint
  // (4223) was printed as p50 and p99, above the largest value seen. Keyless and grouped.
  TempDir dir;
  std::string q = dir.write("point.yml", R"(params:
  pid: {type: int}
queries:
  - name: point
    probe: tracepoint:syscalls:sys_exit_read
    where: pid == $pid
    select: percentile(retval, 1, 50, 99) as size
  - name: point-by-comm
    probe: tracepoint:syscalls:sys_exit_read
    where: pid == $pid
    select: [comm, percentile(retval, 50, 99) as size]
    group_by: comm
)");
  TraceRun run = trace({.queries = {q}, .workload = {"read", "500", "4096"}});
  INFO("stderr:\n" << run.err);
  json size = final_rows(run, "point")[0]["size"];
  INFO("size: " << size.dump());
  for (const char* p : {"p1", "p50", "p99"}) CHECK(as_double(size[p]) == 4096);
  json by_comm = final_rows(run, "point-by-comm");
  INFO("by comm: " << by_comm.dump());
  REQUIRE(by_comm.size() == 1);
  for (const char* p : {"p50", "p99"}) CHECK(as_double(by_comm[0]["size"][p]) == 4096);
  // The bounds are hidden: no other column appears.
  CHECK(by_comm[0].size() == 2);
}

TEST_CASE("percentile(retval, 50, 99.9): the median and the tail of reads of 1..1000 bytes") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("tail.yml", R"(params:
  pid: {type: int}
probe: tracepoint:syscalls:sys_exit_read
where: pid == $pid
select: percentile(retval, 50, 99.9) as size
)");
  TraceRun run = trace({.queries = {q}, .workload = {"read-sizes", "1000"}});
  json size = final_rows(run, "tail")[0]["size"];
  INFO("size: " << size.dump());
  // Rank 500 of 1..1000 is 500, rank 999 is 999: each within 1/16.
  CHECK(std::abs(as_double(size["p50"]) - 500) <= 500.0 / 16);
  CHECK(std::abs(as_double(size["p99.9"]) - 999) <= 999.0 / 16);
}

TEST_CASE("percentile() of a signed value: failed opens (-2) below the successful ones") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("signed.yml", R"(params:
  pid: {type: int}
probe: tracepoint:syscalls:sys_exit_openat
where: pid == $pid
select: [percentile(retval, 10, 50, 90) as ret, min(retval) as low, max(retval) as high]
)");
  TraceRun run = trace({.queries = {q},
                        .workload = {"open-missing", "30", dir.file("missing"), "openat", "10",
                                     dir.file("present")}});
  json row = final_rows(run, "signed")[0];
  INFO("row: " << row.dump());
  // 30 of -2 (ENOENT), then 10 descriptors (small numbers: exact).
  CHECK(as_double(row["ret"]["p10"]) == -2);
  CHECK(as_double(row["ret"]["p50"]) == -2);
  CHECK(as_double(row["ret"]["p90"]) == static_cast<double>(as_int(row["high"])));
  CHECK(as_int(row["low"]) == -2);
  CHECK(as_int(row["high"]) > 0);
}

TEST_CASE("`in` filters and arithmetic inside sum()") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("read-in.yml")},
                        .workload = {"read", "5", "100", "read", "7", "200", "read", "9", "300"}});
  json rows = final_rows(run, "read-in");
  REQUIRE(rows.size() == 1);
  CHECK(as_int(rows[0]["reads"]) == 12);
  CHECK(as_int(rows[0]["hundreds"]) == 5 * 1 + 7 * 2);
}

TEST_CASE("count and sum of write() sizes from tracepoint args") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("writes.yml")}, .workload = {"write", "250", "4096"}});
  json rows = final_rows(run, "writes");
  REQUIRE(rows.size() == 1);
  CHECK(as_int(rows[0]["writes"]) == 250);
  CHECK(as_int(rows[0]["bytes"]) == 250 * 4096);
}

TEST_CASE("syscall() names raw syscall numbers") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("syscall-names.yml")},
                        .workload = {"getppid", "300", "read", "200", "64"}});
  json rows = final_rows(run, "syscall-names");
  CHECK(as_int(row_where(rows, {{"call", "getppid"}})["calls"]) == 300);
  CHECK(as_int(row_where(rows, {{"call", "read"}})["calls"]) == 200);
}

TEST_CASE("errno() and syscall() name failed system calls") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  TraceRun run = trace({.queries = {query_file("errors.yml")},
                        .workload = {"open-missing", "42", dir.file("missing")}});
  json rows = final_rows(run, "errors");
  CHECK(as_int(row_where(rows, {{"call", "openat"}, {"error", "ENOENT"}})["failures"]) == 42);
}

// Syscall records keep "int dfd" in an 8-byte slot: read as the int it is, AT_FDCWD is -100.
TEST_CASE("an int syscall argument in its 8-byte slot is a signed int: args.dfd == -100") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("dfd.yml", R"(params:
  pid: {type: int}
probe: tracepoint:syscalls:sys_enter_openat
where: [pid == $pid, args.dfd == -100]
select: [count() as opens, min(args.dfd) as low, sum(args.dfd) as total]
group_by: args.dfd < 0 as negative
)");
  TraceRun run = trace({.queries = {q}, .workload = {"open-missing", "9", dir.file("missing")}});
  json rows = final_rows(run, "dfd");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["negative"] == true);
  CHECK(as_int(rows[0]["opens"]) == 9);
  CHECK(as_int(rows[0]["low"]) == -100);
  CHECK(as_int(rows[0]["total"]) == -900);
}

TEST_CASE("constant arithmetic is 64-bit: 1 << 40, 1 << 63 and 3 * 1000000000 are exact") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  // A literal is an int in C: `1 << 40` written as is would be 0 (a sweep found it).
  std::string q = dir.write("wide.yml", R"(params:
  pid: {type: int}
probe: tracepoint:syscalls:sys_enter_getppid
where: pid == $pid
select: [1 << 40 as k, sum(1 << 40) as big, max(1 << 63) as top, sum(3 * 1000000000) as ns]
group_by: 1 << 40 as k
)");
  TraceRun run = trace({.queries = {q}, .workload = {"getppid", "5"}});
  json rows = final_rows(run, "wide");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["k"] == uint64_t{1} << 40);
  CHECK(rows[0]["big"] == uint64_t{5} << 40);
  CHECK(rows[0]["top"] == uint64_t{1} << 63);
  CHECK(rows[0]["ns"] == uint64_t{15000000000});
}

TEST_CASE("user() names the uid") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("users.yml")}, .workload = {"getppid", "77"}});
  json rows = final_rows(run, "users");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["user"] == "root");
  CHECK(as_int(rows[0]["calls"]) == 77);
}

std::vector<int64_t> column(const json& rows, const char* name) {
  std::vector<int64_t> values;
  for (const json& row : rows) values.push_back(as_int(row[name]));
  return values;
}

TEST_CASE("order_by desc with limit prints the top rows in order") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("order-desc.yml")}, .workload = {"read-sizes", "20"}});
  json rows = final_rows(run, "order-desc");
  INFO("rows: " << rows.dump());
  CHECK(column(rows, "size") == std::vector<int64_t>{20, 19, 18});
  CHECK(column(rows, "bytes") == std::vector<int64_t>{20, 19, 18});
}

TEST_CASE("order_by asc with limit prints the bottom rows in order") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("order-asc.yml")}, .workload = {"read-sizes", "20"}});
  json rows = final_rows(run, "order-asc");
  INFO("rows: " << rows.dump());
  CHECK(column(rows, "size") == std::vector<int64_t>{1, 2, 3});
}

TEST_CASE("max_entries: keys beyond the capacity are dropped and counted") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("max-entries.yml")}, .workload = {"read-sizes", "25"}});
  std::vector<json> prints = intervals_of(run, "max-entries");
  REQUIRE(!prints.empty());
  const json& last = prints.back();
  INFO("record: " << last.dump());
  CHECK(last["rows"].size() == 10);
  int64_t kept = 0;
  for (const json& row : last["rows"]) kept += as_int(row["reads"]);
  CHECK(kept == 10);
  CHECK(as_int(last["dropped"]) == 15);
}

TEST_CASE("a list of probes, grouped by the probe that fired") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("probe-list.yml")},
                        .workload = {"getppid", "111", "getpid", "222"}});
  json rows = final_rows(run, "probe-list");
  INFO("rows: " << rows.dump());
  REQUIRE(rows.size() == 2);
  for (const json& row : rows) {
    std::string probe = row["probe"].get<std::string>();
    if (probe.find("getppid") != std::string::npos) CHECK(as_int(row["calls"]) == 111);
    else if (probe.find("getpid") != std::string::npos) CHECK(as_int(row["calls"]) == 222);
    else FAIL("unexpected probe " << probe);
  }
}

TEST_CASE("a filter on the probe that fired, by its name; a select alias names the key") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("which.yml", R"(params:
  pid: {type: int}
probe: [tracepoint:syscalls:sys_enter_getppid, tracepoint:syscalls:sys_enter_getpid]
where: pid == $pid && probe == "syscalls:sys_enter_getpid"
select: [probe as fired, count() as calls]
group_by: probe
)");
  TraceRun run = trace({.queries = {q}, .workload = {"getppid", "111", "getpid", "222"}});
  json rows = final_rows(run, "which");
  INFO("rows: " << rows.dump());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["fired"] == "tracepoint:syscalls:sys_enter_getpid");
  CHECK(as_int(rows[0]["calls"]) == 222);
}

TEST_CASE("a wildcard probe attaches to every matching tracepoint") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("wildcard.yml")},
                        .workload = {"getppid", "40", "getpid", "60"}});
  json rows = final_rows(run, "wildcard");
  REQUIRE(rows.size() == 1);
  CHECK(as_int(rows[0]["calls"]) == 100);
}

TEST_CASE("probes whose programs are the same share one, reading the record too") {
  BPFQL_REQUIRE_ROOT();
  std::string file = query_file("shared-exit.yml");
  Completed compiled = run_to_completion({BPFQL_BINARY, "compile", file, "-p", "pid=1"}, milliseconds(20000));
  CHECK(compiled.out.find("and 1 more probe of the query: the same program") != std::string::npos);
  TraceRun run = trace({.queries = {file}, .workload = {"getppid", "40", "getpid", "60"}});
  json rows = final_rows(run, "shared-exit");
  REQUIRE(rows.size() == 1);
  CHECK(as_int(rows[0]["calls"]) == 100);
  CHECK(as_int(rows[0]["lowest"]) > 0);
}

TEST_CASE("sched_process_fork counted by the parent's pid field") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("forks.yml")}, .workload = {"fork", "25"}});
  json rows = final_rows(run, "forks");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["parent"] == "bpfql-wl");
  CHECK(as_int(rows[0]["forks"]) == 25);
}

TEST_CASE("a tracepoint query that reads no field runs as a raw tracepoint and counts the same") {
  BPFQL_REQUIRE_ROOT();
  std::vector<std::string> raw;
  TraceRun run = trace({.queries = {query_file("forks-fieldless.yml")},
                        .workload = {"fork", "25"},
                        .while_tracing = [&](const Process& bpfql) {
                          raw = raw_tracepoints_held_by(bpfql.pid());
                        }});
  CHECK(raw == std::vector<std::string>{"sched_process_fork"});
  json fieldless = final_rows(run, "forks-fieldless");
  REQUIRE(fieldless.size() == 1);
  CHECK(fieldless[0]["parent"] == "bpfql-wl");
  CHECK(as_int(fieldless[0]["forks"]) == 25);
}

TEST_CASE("next to a query that reads the record, both run as one ordinary tracepoint program") {
  BPFQL_REQUIRE_ROOT();
  std::vector<std::string> raw;
  std::vector<uint32_t> programs;
  TraceRun run = trace({.queries = {query_file("forks.yml"), query_file("forks-fieldless.yml")},
                        .workload = {"fork", "25"},
                        .while_tracing = [&](const Process& bpfql) {
                          raw = raw_tracepoints_held_by(bpfql.pid());
                          programs = bpf_programs_held_by(bpfql.pid());
                        }});
  // forks.yml reads args.parent_pid: the fused program needs the record (fusion_test.cpp).
  CHECK(raw.empty());
  CHECK(std::set<uint32_t>(programs.begin(), programs.end()).size() == 1);
  json fieldless = final_rows(run, "forks-fieldless");
  REQUIRE(fieldless.size() == 1);
  CHECK(as_int(fieldless[0]["forks"]) == 25);
  json with_fields = final_rows(run, "forks");
  REQUIRE(with_fields.size() == 1);
  CHECK(as_int(with_fields[0]["forks"]) == 25);
}

}  // namespace
}  // namespace bpfql::test
