// Spans as joins on the real kernel: a probe that both ends and begins, an end rejected by
// `where` that leaves the span open, per-side keys (runqlat), captured stacks (offcputime),
// composite keys, and the span queries of the library (opensnoop, killsnoop, funclatency,
// biolatency), two of them side by side with bpftrace's own tools on the same workload.
#include <csignal>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"
#include "tests/integration/reference_tool.h"

namespace bpfql::test {
namespace {

TEST_CASE("a probe that both ends and begins: N events give N - 1 spans (funcinterval)") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("span-interval.yml")},
                        .workload = {"getppid", "50", "sleep", "20", "getppid", "1"}});
  INFO("stderr:\n" << run.err);
  json rows = final_rows(run, "span-interval");
  REQUIRE(rows.size() == 1);
  // Before the fix the end ran on the begin's own event and consumed it: 0 spans.
  CHECK(as_int(rows[0]["intervals"]) == 50);
  CHECK(as_int(rows[0]["shortest"]) > 0);
}

TEST_CASE("an end that `where` rejects leaves the span open for a later end") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("span-end-where.yml")},
                        .workload = {"getpid", "1", "getppid", "5", "sleep", "100", "getppid", "1"}});
  INFO("stderr:\n" << run.err);
  json rows = final_rows(run, "span-end-where");
  REQUIRE(rows.size() == 1);
  // The five quick getppid() are rejected and do not consume; the one after 100 ms ends it.
  CHECK(as_int(rows[0]["spans"]) == 1);
  CHECK(as_int(rows[0]["shortest"]) >= 100'000'000);
}

TEST_CASE("per-side keys: runqlat counts each wakeup of a sleeping process") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("span-runqlat.yml")},
                        .workload = {"sleep", "20", "20", "20", "20", "20"}});
  INFO("stderr:\n" << run.err);
  json rows = final_rows(run, "span-runqlat");
  REQUIRE(rows.size() == 1);
  // Five timer wakeups, plus at most the wakeups of the release and the exit.
  CHECK(as_int(rows[0]["wakeups"]) >= 5);
  CHECK(as_int(rows[0]["wakeups"]) <= 8);
  CHECK(as_int(rows[0]["longest"]) < 20'000'000);  // waiting to run, not sleeping
}

TEST_CASE("captured stacks: offcputime sums the time a process slept, by where it blocked") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("span-offcpu.yml")},
                        .workload = {"sleep", "50", "50", "50", "50"}});
  INFO("stderr:\n" << run.err);
  json rows = final_rows(run, "span-offcpu");
  REQUIRE(!rows.empty());
  int64_t sleeping = 0;
  for (const json& row : rows) {
    CHECK(row["comm"] == "bpfql-wl");
    std::string stack = row["stack"].dump();
    if (stack.find("nanosleep") != std::string::npos) sleeping += as_int(row["ns"]);
  }
  INFO("rows: " << rows.dump());
  // Four sleeps of 50 ms; each timer is armed a few µs before the switch-out begins its span.
  CHECK(sleeping >= 199'000'000);
  CHECK(sleeping < 300'000'000);
}

TEST_CASE("offcputime in folded form: comm;frames weighted by ns") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("span-offcpu.yml")},
                        .workload = {"sleep", "50", "50"},
                        .format = "folded"});
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  int64_t total = 0;
  std::istringstream in(run.out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("bpfql-wl;", 0) != 0 || line.find("nanosleep") == std::string::npos) continue;
    total += std::stoll(line.substr(line.rfind(' ') + 1));
  }
  CHECK(total >= 99'000'000);  // two sleeps of 50 ms, less the µs before each switch-out
  CHECK(total < 200'000'000);
}

TEST_CASE("composite keys and a captured string: opens of one process by path") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string path = dir.file("opened");
  TraceRun run = trace({.queries = {query_file("span-composite.yml")},
                        .workload = {"openat", "7", path, "open-missing", "3", dir.file("missing")}});
  INFO("stderr:\n" << run.err);
  json rows = final_rows(run, "span-composite");
  json row = row_where(rows, {{"path", path}});
  CHECK(as_int(row["opens"]) == 7);
  for (const json& r : rows) CHECK(r["path"] != dir.file("missing"));  // failed: where rejects
}

TEST_CASE("spans still open at exit are counted") {
  BPFQL_REQUIRE_ROOT();
  // 1000 begins, each its own key, no end; the hash holds 100 (the rest are dropped).
  TraceRun run = trace({.queries = {query_file("orphan-spans.yml")}, .workload = {"getppid", "1000"}});
  INFO("stderr:\n" << run.err);
  CHECK(run.err.find("query orphan-spans: 100 spans still open at exit (begun, never ended)") !=
        std::string::npos);
}

TEST_CASE("library opensnoop side by side with bpftrace's opensnoop.bt: same opens, paths and results") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string found = dir.file("found"), missing = dir.file("missing");
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("syscalls/opensnoop")},
                        .workload = {"openat", "4", found, "open-missing", "2", missing},
                        .pass_pid = false,
                        .pid_option = true,  // the machine opens files all the time
                        .while_tracing = [&](const Process&) {
                          bt.start({"/usr/bin/bpftrace", "/usr/sbin/opensnoop.bt"}, "Hit Ctrl-C");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err);
  std::vector<json> ours = events_of_pid(run, "opensnoop");
  // bpfql: "result" is the fd, or the errno's name.
  std::multiset<std::string> bpfql_lines, bpftrace_lines;
  for (const json& e : ours) {
    std::string path = e["path"];
    if (path != found && path != missing) continue;
    // errno() is text in every row: the fd's digits, or the errno's name.
    std::string result = e["result"];
    bool failed = result.find_first_not_of("0123456789") != std::string::npos;
    if (failed) CHECK(result == "ENOENT");
    bpfql_lines.insert(path + (failed ? " ENOENT" : " fd"));
  }
  // bpftrace: PID COMM FD ERR PATH
  for (const std::string& line : reference) {
    auto w = split_words(line);
    if (w.size() != 5 || w[0] != std::to_string(run.workload_pid)) continue;
    if (w[4] != found && w[4] != missing) continue;
    bpftrace_lines.insert(w[4] + (w[3] == "2" ? " ENOENT" : w[2] != "-1" ? " fd" : " ?"));
  }
  INFO("bpfql events of the workload: " << ours.size() << ", all: " << events_of(run, "opensnoop").size()
       << ", workload pid " << run.workload_pid);
  CHECK(bpfql_lines.size() == 6);
  CHECK(bpfql_lines.count(found + " fd") == 4);
  CHECK(bpfql_lines.count(missing + " ENOENT") == 2);
  INFO("bpfql:\n" << lines_text(bpfql_lines) << "bpftrace:\n" << lines_text(bpftrace_lines));
  std::string all = lines_text(reference);
  INFO("bpftrace output (" << reference.size() << " lines), the end:\n"
       << all.substr(all.size() > 2000 ? all.size() - 2000 : 0));
  if (all.find("Lost ") == std::string::npos) {
    CHECK(bpfql_lines == bpftrace_lines);
  } else {  // bpftrace traces every process here and its buffer overflowed: what it saw, we saw
    MESSAGE("bpftrace lost events on this busy machine: comparing what it printed");
    for (const auto& l : bpftrace_lines) CHECK(bpfql_lines.count(l) >= bpftrace_lines.count(l));
  }
}

TEST_CASE("library killsnoop side by side with bpftrace's killsnoop.bt: signal, target, result") {
  BPFQL_REQUIRE_ROOT();
  ReferenceTool bt;
  TraceRun run = trace({.queries = {library_query("process/killsnoop")},
                        .pass_pid = false,
                        .pid_option = true,
                        .command = {"/bin/sh", "-c", "read x; kill -0 $$; kill -0 2147483646 2>/dev/null; true"},
                        .while_tracing = [&](const Process&) {
                          bt.start({"/usr/bin/bpftrace", "/usr/sbin/killsnoop.bt"}, "Hit Ctrl-C");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err);
  std::vector<json> ours = events_of_pid(run, "killsnoop");
  REQUIRE(ours.size() == 2);
  CHECK(as_int(ours[0]["sig"]) == 0);
  CHECK(as_int(ours[0]["target"]) == run.workload_pid);
  CHECK(ours[0]["result"] == "0");  // errno() is text in every row
  CHECK(as_int(ours[1]["target"]) == 2147483646);
  CHECK(ours[1]["result"] == "ESRCH");
  // bpftrace: TIME PID COMM SIG TPID RESULT
  std::vector<std::vector<std::string>> theirs;
  for (const std::string& line : reference) {
    auto w = split_words(line);
    if (w.size() == 6 && w[1] == std::to_string(run.workload_pid)) theirs.push_back(w);
  }
  REQUIRE(theirs.size() == 2);
  CHECK(theirs[0][3] == "0");
  CHECK(theirs[0][4] == std::to_string(run.workload_pid));
  CHECK(theirs[0][5] == "0");
  CHECK(theirs[1][4] == "2147483646");
  CHECK(theirs[1][5] == "-3");  // -ESRCH
}

TEST_CASE("library funclatency on a uprobe: one span per call") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {library_query("lang/funclatency")},
                        .params = {{"target", BPFQL_UPROBE_TARGET}, {"function", "bpfql_target_add"}},
                        .pass_pid = false,
                        .command = {BPFQL_UPROBE_TARGET, "300"}});
  INFO("stderr:\n" << run.err);
  json rows = final_rows(run, "funclatency");
  json row = row_where(rows, {{"comm", "bpfql-ut"}});
  CHECK(as_int(row["calls"]) == 300);
}

TEST_CASE("library biolatency: direct writes are counted from issue to completion") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string file = "/var/tmp/bpfql-biolatency-test";
  TraceRun run = trace({.queries = {library_query("block/biolatency")},
                        .pass_pid = false,
                        .command = {"/bin/sh", "-c",
                                    "read x; dd if=/dev/zero of=" + file +
                                        " bs=4096 count=64 oflag=direct,sync 2>/dev/null; rm -f " + file}});
  INFO("stderr:\n" << run.err);
  json rows = final_rows(run, "biolatency");
  int64_t writes = 0;
  for (const json& r : rows)
    if (r["op"].get<std::string>().find('W') != std::string::npos) writes += as_int(r["ios"]);
  INFO("rows: " << rows.dump());
  CHECK(writes >= 64);  // every synchronous direct write is at least one request
}

}  // namespace
}  // namespace bpfql::test
