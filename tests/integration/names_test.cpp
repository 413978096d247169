// Name functions and units on real events from workloads the tests start: open_flags(),
// errno() (always text), signal(), tcp_state() and symbolic() from the print fmt, task_state(),
// cgroup_path(), irq(), pcomm/ppid; units named in JSON, human units in tables, rate(); --pid ends the
// run; -f folded folds the whole run and -o out.svg draws it.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

std::string own_comm() {
  std::ifstream in("/proc/self/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

// A listener on 127.0.0.1 that never accepts (the kernel completes up to 16 handshakes).
struct Listener {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int port = 0;
  Listener() {
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0);
    REQUIRE(::listen(fd, 16) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd); }
};

}  // namespace

TEST_CASE("open_flags() and errno(): names for the workload's openat()s; errno() is always text") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("flags.yml", R"(params:
  pid: {type: int}
queries:
  - name: flags
    probe: tracepoint:syscalls:sys_enter_openat
    where: pid == $pid
    select: count() as opens
    group_by: open_flags(args.flags) as flags
  - name: results
    probe: tracepoint:syscalls:sys_exit_openat
    where: pid == $pid
    select: count() as calls
    group_by: errno(retval) as result
)");
  TraceRun run = trace({.queries = {q},
                        .workload = {"openat", "7", dir.file("made"), "open-missing", "5",
                                     dir.file("missing")}});
  json flags = final_rows(run, "flags");
  INFO("flags: " << flags.dump());
  // openat step: O_RDONLY|O_CREAT (0100); open-missing: O_RDONLY.
  CHECK(as_int(row_where(flags, {{"flags", "O_RDONLY|O_CREAT"}})["opens"]) == 7);
  CHECK(as_int(row_where(flags, {{"flags", "O_RDONLY"}})["opens"]) == 5);
  json results = final_rows(run, "results");
  INFO("results: " << results.dump());
  CHECK(as_int(row_where(results, {{"result", "ENOENT"}})["calls"]) == 5);
  int64_t successes = 0;
  for (const auto& row : results) {
    REQUIRE(row["result"].is_string());  // a file descriptor as text, never a number
    if (row["result"] != "ENOENT") successes += as_int(row["calls"]);
  }
  CHECK(successes == 7);
}

TEST_CASE("signal(): each forked child's exit sends the workload one SIGCHLD") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("sigs.yml", R"(params:
  pid: {type: int}
probe: tracepoint:signal:signal_generate
where: args.pid == $pid
select: count() as signals
group_by: signal(args.sig) as sig
)");
  TraceRun run = trace({.queries = {q}, .workload = {"fork", "6"}});
  json rows = final_rows(run, "sigs");
  INFO("rows: " << rows.dump());
  CHECK(as_int(row_where(rows, {{"sig", "SIGCHLD"}})["signals"]) == 6);
}

TEST_CASE("irq(): a hardware IRQ's name is the one irq:irq_handler_entry records") {
  BPFQL_REQUIRE_ROOT();
  // IRQs fire in whatever task they interrupt: no pid filter. A write and fsync on disk makes
  // the virtio disk interrupt; the network's fire on their own.
  TempDir dir;
  std::string q = dir.write("irqs.yml", R"(name: irqs
probe: tracepoint:irq:irq_handler_entry
select: count() as handled
group_by: [args.irq as number, irq(args.irq) as irq, args.name as name]
)");
  TraceRun run = trace({.queries = {q},
                        .workload = {"getppid", "1"},
                        .pass_pid = false,
                        .after_workload = [] {
                          std::string path = "/var/tmp/bpfql-irq-test." + std::to_string(getpid());
                          int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
                          REQUIRE(fd >= 0);
                          std::string block(65536, 'x');
                          CHECK(::write(fd, block.data(), block.size()) ==
                                static_cast<ssize_t>(block.size()));
                          ::fsync(fd);
                          ::close(fd);
                          ::unlink(path.c_str());
                          ::usleep(500'000);
                        }});
  json rows = final_rows(run, "irqs");
  INFO("rows: " << rows.dump());
  REQUIRE(!rows.empty());
  for (const json& row : rows) {
    // A shared IRQ lists every handler; the event names the one that ran.
    std::string names = "," + row["irq"].get<std::string>() + ",";
    CHECK(names.find("," + row["name"].get<std::string>() + ",") != std::string::npos);
    CHECK(row["irq"].is_string());
  }
}

TEST_CASE("tcp_state() and symbolic(): the workload's connects, by state name") {
  BPFQL_REQUIRE_ROOT();
  Listener listener;
  TempDir dir;
  std::string q = dir.write("states.yml", R"(params:
  port: {type: int}
queries:
  - name: states
    probe: tracepoint:sock:inet_sock_set_state
    where: args.dport == $port
    select: count() as changes
    group_by: [tcp_state(args.oldstate) as old, tcp_state(args.newstate) as new]
  - name: kernel-names
    probe: tracepoint:sock:inet_sock_set_state
    where: args.dport == $port
    select: count() as changes
    group_by: [symbolic(args.newstate) as new, symbolic(args.protocol) as proto]
)");
  TraceRun run = trace({.queries = {q},
                        .workload = {"connect", "5", std::to_string(listener.port)},
                        .params = {{"port", std::to_string(listener.port)}},
                        .pass_pid = false});
  json states = final_rows(run, "states");
  INFO("states: " << states.dump());
  CHECK(as_int(row_where(states, {{"old", "CLOSE"}, {"new", "SYN_SENT"}})["changes"]) == 5);
  CHECK(as_int(row_where(states, {{"old", "SYN_SENT"}, {"new", "ESTABLISHED"}})["changes"]) == 5);
  json names = final_rows(run, "kernel-names");
  INFO("kernel names: " << names.dump());
  CHECK(as_int(row_where(names, {{"new", "TCP_SYN_SENT"}, {"proto", "IPPROTO_TCP"}})["changes"]) == 5);
  CHECK(as_int(row_where(names, {{"new", "TCP_ESTABLISHED"}, {"proto", "IPPROTO_TCP"}})["changes"]) == 5);
}

TEST_CASE("task_state(): the workload's sleeps switch it out as S") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("states.yml", R"(params:
  pid: {type: int}
probe: tracepoint:sched:sched_switch
where: args.prev_pid == $pid
select: count() as switches
group_by: task_state(args.prev_state) as state
)");
  TraceRun run = trace({.queries = {q}, .workload = {"sleep", "20", "20", "20", "20"}});
  json rows = final_rows(run, "states");
  INFO("rows: " << rows.dump());
  // Four clock_nanosleep()s; reading its start line from stdin may add one more S.
  int64_t sleeping = as_int(row_where(rows, {{"state", "S"}})["switches"]);
  CHECK(sleeping >= 4);
  CHECK(sleeping <= 5);
}

TEST_CASE("pcomm and ppid: the workload's parent is this test process") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("parent.yml", R"(params:
  pid: {type: int}
probe: tracepoint:syscalls:sys_enter_getppid
where: pid == $pid
select: count() as calls
group_by: [pcomm, ppid]
)");
  TraceRun run = trace({.queries = {q}, .workload = {"getppid", "25"}});
  json rows = final_rows(run, "parent");
  INFO("rows: " << rows.dump());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["pcomm"] == own_comm());
  CHECK(as_int(rows[0]["ppid"]) == getpid());
  CHECK(as_int(rows[0]["calls"]) == 25);
}

TEST_CASE("cgroup_path(): the workload in a cgroup of the test's own") {
  BPFQL_REQUIRE_ROOT();
  namespace fs = std::filesystem;
  fs::path root = fs::exists("/sys/fs/cgroup/cgroup.controllers") ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
  if (!fs::exists(root / "cgroup.procs")) {
    MESSAGE("skipped: no cgroup v2 hierarchy mounted");
    return;
  }
  std::string name = "bpfql-test-" + std::to_string(getpid());
  fs::path group = root / name;
  REQUIRE(::mkdir(group.c_str(), 0755) == 0);
  TempDir dir;
  std::string q = dir.write("service.yml", R"(params:
  pid: {type: int}
probe: tracepoint:syscalls:sys_enter_getppid
where: pid == $pid
select: count() as calls
group_by: cgroup_path(cgroup) as service
)");
  // The shell moves itself into the cgroup, then becomes the workload (same pid).
  std::string script = "echo $$ > " + (group / "cgroup.procs").string() + " && exec " +
                       BPFQL_WORKLOAD + " getppid 40";
  TraceRun run = trace({.queries = {q}, .command = {"/bin/sh", "-c", script}});
  json rows = final_rows(run, "service");
  ::rmdir(group.c_str());
  INFO("rows: " << rows.dump());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["service"] == "/" + name);
  CHECK(as_int(rows[0]["calls"]) == 40);
}

TEST_CASE("units: bytes and ns named in JSON; tables show MiB and thousands separators") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("bytes.yml", R"(params:
  pid: {type: int}
probe: tracepoint:syscalls:sys_exit_read
where: [pid == $pid, retval > 0]
select: [sum(retval) as bytes, count() as reads, rate(count()) as per_s, sum(retval) / 1024 as kib]
)");
  TraceRun json_run = trace({.queries = {q}, .workload = {"read", "1280", "4096"}});
  auto records = intervals_of(json_run, "bytes");
  REQUIRE(!records.empty());
  const json& last = records.back();
  INFO("record: " << last.dump());
  CHECK(last["schema"] == 2);
  CHECK(last["units"]["bytes"] == "bytes");
  CHECK(last["units"]["per_s"] == "/s");
  CHECK(last["units"]["kib"] == "KiB");
  CHECK(last["units"].count("reads") == 0);
  const json& row = last["rows"][0];
  CHECK(as_int(row["bytes"]) == 1280 * 4096);
  CHECK(as_int(row["kib"]) == 1280 * 4);
  CHECK(as_double(row["per_s"]) * as_double(last["interval_s"]) == doctest::Approx(1280).epsilon(0.001));

  TraceRun table = trace({.queries = {q}, .workload = {"read", "1280", "4096"}, .format = "table"});
  INFO("table:\n" << table.out);
  CHECK(table.out.find("bytes (MiB)") != std::string::npos);
  CHECK(table.out.find("kib (MiB)") != std::string::npos);
  CHECK(table.out.find("1,280") != std::string::npos);  // reads
  CHECK(table.out.find("per_s (/s)") != std::string::npos);
}

TEST_CASE("--pid: the run ends with its final print when the process exits") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("calls.yml", R"(probe: tracepoint:syscalls:sys_enter_getppid
select: count() as calls
)");
  // No stop signal: bpfql must end on its own once the workload has exited.
  TraceRun run = trace({.queries = {q}, .workload = {"getppid", "33"}, .pass_pid = false,
                        .pid_option = true, .stop = Stop::OnItsOwn});
  CHECK_MESSAGE(run.status.exited_with(0), run.status.describe());
  json rows = final_rows(run, "calls");
  CHECK(as_int(rows[0]["calls"]) == 33);
  CHECK(run.err.find("exited: printing the result and stopping") != std::string::npos);
}

}  // namespace bpfql::test
