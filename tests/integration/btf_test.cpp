// Kernel structs through BTF, user memory through BTF and casts, on the real kernel, with exact
// values from workloads the tests start: curtask->pid is the workload's pid, its real_parent
// the test process, argv exactly what the test exec'd; the library queries built on them
// (execsnoop, exitsnoop, runqlen) and execsnoop side by side with a bpftrace rewrite.
#include <unistd.h>

#include <cstdlib>
#include <chrono>
#include <csignal>
#include <string>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

// A shell that waits for its release line, then becomes `echo` with a known argv.
const std::vector<std::string> kExecCommand = {
    "/bin/sh", "-c", "read line; exec /bin/echo alpha 'beta gamma' delta >/dev/null"};

}  // namespace

TEST_CASE("curtask, its real_parent, comm and argv through BTF: exact values of a known exec") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("btf-exec.yml")}, .command = kExecCommand});
  CHECK(run.status.exited_with(0));
  auto events = events_of(run, "btf-exec");
  REQUIRE(events.size() == 1);
  const json& e = events[0];
  CHECK(as_int(e["task_pid"]) == run.workload_pid);
  CHECK(as_int(e["task_tgid"]) == run.workload_pid);
  CHECK(as_int(e["parent"]) == getpid());  // the test started the shell
  CHECK(as_int(e["ppid"]) == getpid());
  CHECK(e["task_comm"] == "sh");
  CHECK(e["cmdline"] == "/bin/echo alpha beta gamma delta");
  CHECK(e["second"] == "beta gamma");
  CHECK(e["third"] == "delta");
  CHECK(e["parent_comm"].get<std::string>().find("bpfql") != std::string::npos);
}

TEST_CASE("a user struct through BTF: clock_nanosleep's timespec, exactly as requested") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("btf-user-struct.yml")},
                        .workload = {"sleep", "20", "1003"}});
  CHECK(run.status.exited_with(0));
  auto events = events_of(run, "btf-user-struct");
  REQUIRE(events.size() == 2);
  CHECK(as_int(events[0]["sec"]) == 0);
  CHECK(as_int(events[0]["nsec"]) == 20'000'000);
  CHECK(as_int(events[1]["sec"]) == 1);
  CHECK(as_int(events[1]["nsec"]) == 3'000'000);
}

TEST_CASE("casts and ?: on a negative return value: (s32), (u8), (u16), 0 - retval") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  TraceRun run = trace({.queries = {query_file("btf-casts.yml")},
                        .workload = {"open-missing", "3", dir.file("missing")}});
  CHECK(run.status.exited_with(0));
  auto events = events_of(run, "btf-casts");
  REQUIRE(events.size() == 3);
  for (const json& e : events) {
    CHECK(as_int(e["retval"]) == -2);  // -ENOENT
    CHECK(as_int(e["r32"]) == -2);
    CHECK(as_int(e["r8"]) == 254);
    CHECK(as_int(e["r16"]) == 65534);
    CHECK(as_int(e["err"]) == 2);
  }
}

TEST_CASE("args.ARR[N]: raw_syscalls:sys_enter's args[2] is openat's flags, by a constant or run-time index") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  TraceRun run = trace({.queries = {query_file("btf-raw-args.yml")},
                        .workload = {"open-missing", "5", dir.file("missing")}});
  CHECK(run.status.exited_with(0));
  json rows = final_rows(run, "btf-raw-args");
  json row = row_where(rows, {{"flags", 0}});  // O_RDONLY
  CHECK(as_int(row["calls"]) == 5);
  CHECK(as_int(row["path"]) != 0);  // the path pointer, args[1], again chosen per event
  CHECK(row["path_by_id"] == row["path"]);
  CHECK(as_int(row["past"]) == 0);
  CHECK(rows.size() == 1);
}

TEST_CASE("library process/execsnoop: the workload's exec with its whole command line") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {"process/execsnoop"}, .pass_pid = false, .pid_option = true,
                        .command = kExecCommand});
  CHECK(run.status.exited_with(0));
  auto events = events_of(run, "execsnoop");
  REQUIRE(events.size() == 1);
  CHECK(as_int(events[0]["pid"]) == run.workload_pid);
  CHECK(as_int(events[0]["ppid"]) == getpid());
  CHECK(events[0]["args"] == "/bin/echo alpha beta gamma delta");
}

TEST_CASE("library process/exitsnoop: exit code, fatal signal and age of known exits") {
  BPFQL_REQUIRE_ROOT();
  // The workload's children: one exits with code 7 after 200 ms, one is killed by SIGKILL.
  TraceRun run = trace({.queries = {"process/exitsnoop"}, .pass_pid = false,
                        .command = {"/bin/sh", "-c",
                                    "read line; /bin/sh -c 'sleep 0.2; exit 7'; "
                                    "/bin/sh -c 'kill -9 $$'; exit 0"}});
  CHECK(run.status.exited_with(0));
  std::vector<json> children;
  for (const json& e : events_of(run, "exitsnoop"))
    if (as_int(e["ppid"]) == run.workload_pid && e["comm"] == "sh") children.push_back(e);
  REQUIRE(children.size() == 2);
  CHECK(as_int(children[0]["code"]) == 7);
  CHECK(as_int(children[0]["signal"]) == 0);
  CHECK(as_int(children[0]["age_ms"]) >= 200);
  CHECK(as_int(children[0]["age_ms"]) < 60'000);
  CHECK(as_int(children[1]["code"]) == 0);
  CHECK(as_int(children[1]["signal"]) == 9);
}

TEST_CASE("library sched/runqlen: a histogram of run queue lengths, one sample per tick") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {"sched/runqlen"}, .workload = {"spin", "300"},
                        .params = {{"hz", "50"}}, .pass_pid = false});
  CHECK(run.status.exited_with(0));
  json rows = final_rows(run, "runqlen");
  REQUIRE(rows.size() == 1);
  int64_t samples = 0;
  for (const json& bucket : rows[0]["runqlen"]) samples += as_int(bucket["count"]);
  // 50 Hz on each CPU for at least the 300 ms of the spin: at least 15 samples in all.
  CHECK(samples >= 15);
  CHECK(rows[0]["runqlen"][0]["min"] == 0);
}

TEST_CASE("execsnoop side by side with bpftrace's tracepoint rewrite: the same command line") {
  BPFQL_REQUIRE_ROOT();
  if (access("/usr/bin/bpftrace", X_OK) != 0 && access("/usr/sbin/bpftrace", X_OK) != 0) {
    MESSAGE("skipped: no bpftrace");
    return;
  }
  // bpftrace prints the command line of every exec of /bin/echo while it runs.
  std::string bpftrace_bin = access("/usr/bin/bpftrace", X_OK) == 0 ? "/usr/bin/bpftrace"
                                                                      : "/usr/sbin/bpftrace";
  Process bpftrace = Process::spawn(
      {bpftrace_bin, "-e",
       "tracepoint:syscalls:sys_enter_execve /str(args->filename) == \"/bin/echo\"/ "
       "{ printf(\"%d \", pid); join(args->argv); }"});
  REQUIRE(bpftrace.wait_for_stdout("Attaching", std::chrono::seconds(30)));
  TraceRun run = trace({.queries = {"process/execsnoop"}, .pass_pid = false, .pid_option = true,
                        .command = kExecCommand});
  usleep(300'000);
  bpftrace.signal(SIGINT);
  REQUIRE(bpftrace.wait(std::chrono::seconds(10)));
  const std::string& text = bpftrace.out();
  auto events = events_of(run, "execsnoop");
  REQUIRE(events.size() == 1);
  std::string expected = std::to_string(run.workload_pid) + " " +
                         events[0]["args"].get<std::string>() + "\n";
  INFO("bpftrace printed:\n" << text);
  CHECK(text.find(expected) != std::string::npos);
}

TEST_CASE("interval:100ms runs ten times a second on one CPU, not once per CPU") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("interval-ticks.yml")},
                        .workload = {"getpid", "1"},
                        .after_workload = [] { usleep(3'300'000); }});
  CHECK(run.status.exited_with(0));
  auto prints = intervals_of(run, "interval-ticks");
  REQUIRE(prints.size() >= 3);
  // The second print covers a whole second (the first starts when the timer does).
  const json& rows = prints[1]["rows"];
  REQUIRE(rows.size() == 1);
  CHECK(as_int(rows[0]["ticks"]) >= 9);
  CHECK(as_int(rows[0]["ticks"]) <= 11);
  CHECK(as_int(rows[0]["cpu"]) == 0);
}

}  // namespace bpfql::test
