// Faults: every way a run ends (SIGINT, SIGTERM, SIGHUP, stop_after, SIGKILL) leaves no bpfql
// program loaded and no probe event in tracefs, and all but SIGKILL print the final result
// first; a traced process that exits or restarts; a --pid that names no process; the host faults
// (not root, no tracefs, no kernel headers where libbcc compiles, a verifier rejection, a probe the
// kernel lacks), each a clear message and exit 1; and the privileges a run keeps once it is attached.
#include <signal.h>
#include <unistd.h>

#include <linux/capability.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"
#include "tests/integration/kernel_state.h"

namespace bpfql::test {
namespace {

constexpr milliseconds kAttach{30000};
constexpr milliseconds kExit{30000};
constexpr long kCalls = 37;  // bpfql_target_add calls (and USDT ticks) per target run

// bpfql-uprobe-target's function and USDT probe, as query files (the path is only known here).
struct TargetQueries {
  TempDir dir;
  std::string adds, ticks;
  TargetQueries() {
    adds = dir.write("adds.yml", "name: adds\nprobe: uprobe:" + std::string(BPFQL_UPROBE_TARGET) +
                                     ":bpfql_target_add\nselect: count() as calls\n");
    ticks = dir.write("ticks.yml", "name: ticks\nprobe: usdt:" + std::string(BPFQL_UPROBE_TARGET) +
                                       ":bpfql_test:tick\nselect: count() as ticks\n");
  }
};

std::vector<std::string> bpfql_run(std::vector<std::string> args) {
  args.insert(args.begin(), {BPFQL_BINARY, "run"});
  return args;
}

// The NDJSON bpfql printed, as the harness's helpers take it.
TraceRun as_trace_run(const Process& bpfql, ExitStatus status) {
  TraceRun run;
  run.status = status;
  run.out = bpfql.out();
  run.err = bpfql.err();
  for (const std::string& line : split_lines(run.out)) {
    if (line.empty()) continue;
    json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
    INFO("stdout line: " << line);
    REQUIRE_MESSAGE(record.is_object(), "bpfql -f json printed a line that is not a JSON object");
    run.records.push_back(std::move(record));
  }
  return run;
}

// Starts bpfql-uprobe-target, waiting for its "go".
Process start_target(long calls) { return Process::spawn({BPFQL_UPROBE_TARGET, std::to_string(calls)}); }

void release(Process& target) {
  REQUIRE(target.write_stdin("go\n"));
  auto status = target.wait(kExit);
  INFO("target stderr: " << target.err());
  REQUIRE_MESSAGE(status.has_value(), "bpfql-uprobe-target did not finish within 30 s");
  REQUIRE(status->exited_with(0));
}

void require_attached(Process& bpfql) {
  bool attached = bpfql.wait_for_stderr("Tracing", kAttach);
  if (!attached) bpfql.wait(milliseconds(2000));
  INFO("bpfql stderr:\n" << bpfql.err());
  REQUIRE_MESSAGE(attached, "bpfql did not print 'Tracing' within 30 s");
}

// How a run ends: a signal, or 0 for stop_after (--stop-after 3s).
struct Ending {
  const char* name;
  int signal;
};

struct EndedRun {
  TraceRun run;
  pid_t bpfql_pid = -1;
  std::vector<uint32_t> programs;            // the BPF programs bpfql held while attached
  std::vector<std::string> events_attached;  // tracefs probe events naming bpfql's pid then
};

// A uprobe, a USDT and a tracepoint query on one target process, ended by `how`.
EndedRun run_and_end(const Ending& how) {
  TargetQueries q;
  Process target = start_target(kCalls);
  std::vector<std::string> args = {q.adds, q.ticks, query_file("exit-group.yml"), "-f", "json",
                                   "--pid", std::to_string(target.pid())};
  if (how.signal == 0) args.insert(args.end(), {"--stop-after", "3s"});
  Process bpfql = Process::spawn(bpfql_run(args));
  require_attached(bpfql);
  EndedRun ended;
  ended.bpfql_pid = bpfql.pid();
  ended.programs = bpf_programs_held_by(bpfql.pid());
  ended.events_attached = probe_events_containing(std::to_string(bpfql.pid()));
  // SIGKILL before the target ends: its exit would end the run first (--pid, docs/language.md).
  if (how.signal == SIGKILL) bpfql.signal(SIGKILL);
  release(target);
  if (how.signal != 0 && how.signal != SIGKILL) bpfql.signal(how.signal);
  auto status = bpfql.wait(kExit);
  INFO("bpfql stderr:\n" << bpfql.err());
  REQUIRE_MESSAGE(status.has_value(), "bpfql did not exit within 30 s after " << how.name);
  ended.run = as_trace_run(bpfql, *status);
  return ended;
}

TEST_CASE("every way a run ends leaves no program and no probe event; all but SIGKILL print first") {
  BPFQL_REQUIRE_ROOT();
  for (Ending how : {Ending{"SIGINT", SIGINT}, Ending{"SIGTERM", SIGTERM}, Ending{"SIGHUP", SIGHUP},
                     Ending{"stop_after", 0}, Ending{"SIGKILL", SIGKILL}}) {
    SUBCASE(how.name) {
      EndedRun ended = run_and_end(how);
      const TraceRun& run = ended.run;
      INFO("ended by " << how.name << "\nbpfql stderr:\n" << run.err << "\nstdout:\n" << run.out);
      // A uprobe, a USDT probe and a tracepoint: three programs while attached.
      CHECK(ended.programs.size() >= 3);
      // libbcc creates uprobes with perf_event_open when the kernel has the uprobe PMU (as here):
      // nothing is written to uprobe_events, so nothing can be left there either.
      CHECK_MESSAGE(ended.events_attached.empty(), "tracefs events while attached: "
                                                       << json(ended.events_attached).dump());
      if (how.signal == SIGKILL) {
        CHECK(run.status.signal == SIGKILL);
        CHECK(run.records.empty());
      } else {
        CHECK(run.status.exited_with(0));
        CHECK(as_int(final_rows(run, "adds")[0]["calls"]) == kCalls);
        CHECK(as_int(final_rows(run, "ticks")[0]["ticks"]) == kCalls);
        CHECK(as_int(final_rows(run, "exits")[0]["exits"]) == 1);
      }
      std::vector<uint32_t> left = still_loaded(ended.programs, milliseconds(5000));
      CHECK_MESSAGE(left.empty(), "programs still loaded 5 s after bpfql ended: " << json(left).dump());
      std::vector<std::string> events = probe_events_containing(std::to_string(ended.bpfql_pid));
      CHECK_MESSAGE(events.empty(), "tracefs events left: " << json(events).dump());
    }
  }
}

TEST_CASE("the traced process exits: bpfql says so, prints the counts and exits 0") {
  BPFQL_REQUIRE_ROOT();
  TargetQueries q;
  Process target = start_target(kCalls);
  pid_t target_pid = target.pid();
  Process bpfql = Process::spawn(
      bpfql_run({q.adds, q.ticks, "-f", "json", "--pid", std::to_string(target_pid)}));
  require_attached(bpfql);
  release(target);
  auto status = bpfql.wait(kExit);
  INFO("bpfql stderr:\n" << bpfql.err());
  REQUIRE_MESSAGE(status.has_value(), "bpfql did not end after the traced process exited");
  CHECK(bpfql.err().find("process " + std::to_string(target_pid) + " exited") != std::string::npos);
  TraceRun run = as_trace_run(bpfql, *status);
  CHECK(run.status.exited_with(0));
  CHECK(as_int(final_rows(run, "adds")[0]["calls"]) == kCalls);
  CHECK(as_int(final_rows(run, "ticks")[0]["ticks"]) == kCalls);
}

TEST_CASE("a restarted target is traced again when the query names the binary, not a pid") {
  BPFQL_REQUIRE_ROOT();
  TargetQueries q;
  Process bpfql = Process::spawn(bpfql_run({q.adds, q.ticks, "-f", "json"}));
  require_attached(bpfql);
  for (long calls : {11L, 29L}) {  // the first run, then the "restarted" one
    Process target = start_target(calls);
    release(target);
    CHECK(target.out() == "done " + std::to_string(calls) + " " +
                              std::to_string(calls * 1000 + calls * (calls - 1)) + "\n");
    CHECK_MESSAGE(bpfql.running(), "bpfql stopped when the target exited:\n" << bpfql.err());
  }
  bpfql.signal(SIGINT);
  auto status = bpfql.wait(kExit);
  REQUIRE(status.has_value());
  TraceRun run = as_trace_run(bpfql, *status);
  INFO("bpfql stderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  CHECK(as_int(final_rows(run, "adds")[0]["calls"]) == 11 + 29);
  CHECK(as_int(final_rows(run, "ticks")[0]["ticks"]) == 11 + 29);
}

// A pid no process has: a child's, once reaped.
pid_t vanished_pid() {
  Process gone = Process::spawn({"/bin/true"});
  pid_t pid = gone.pid();
  REQUIRE(gone.wait(milliseconds(10000)).has_value());
  REQUIRE(::kill(pid, 0) != 0);
  return pid;
}

TEST_CASE("a --pid that names no process is a clear error, exit 1") {
  BPFQL_REQUIRE_ROOT();
  TargetQueries q;
  pid_t pid = vanished_pid();
  for (const std::string& query : {q.adds, query_file("exit-group.yml")}) {
    CAPTURE(query);
    Completed c = run_to_completion(bpfql_run({query, "--pid", std::to_string(pid)}), kExit);
    INFO("stderr: " << c.err);
    CHECK(c.status.exited_with(1));
    CHECK(c.err.find("no process with pid " + std::to_string(pid)) != std::string::npos);
    CHECK(c.err.find("Tracing") == std::string::npos);
  }
}

// Runs `bpfql run ARGS...` through `sh -c SCRIPT` in a private mount namespace; SCRIPT ends with
// `exec "$@"`, so it can change mounts first.
Completed in_mount_namespace(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/unshare", "--mount", "--propagation", "private",
                                   "/bin/sh", "-c", script + "\nexec \"$@\"", "sh"};
  for (const std::string& a : bpfql_run(args)) argv.push_back(a);
  return run_to_completion(argv, kExit);
}

bool have(const char* path) { return ::access(path, X_OK) == 0; }

TEST_CASE("not root: a clear message, exit 1") {
  BPFQL_REQUIRE_ROOT();  // to become someone else
  if (!have("/usr/bin/setpriv")) {
    MESSAGE("skipped: no /usr/bin/setpriv");
    return;
  }
  Completed c = run_to_completion({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                   "--clear-groups", BPFQL_BINARY, "run",
                                   query_file("exit-group.yml"), "--pid", "1"},
                                  kExit);
  INFO("stderr: " << c.err);
  CHECK(c.status.exited_with(1));
  CHECK(c.err.find("needs root") != std::string::npos);
}

TEST_CASE("tracefs not mounted: a clear message, exit 1") {
  BPFQL_REQUIRE_ROOT();
  if (!have("/usr/bin/unshare")) {
    MESSAGE("skipped: no /usr/bin/unshare");
    return;
  }
  const std::vector<std::string> args = {query_file("exit-group.yml"), "--pid", "1"};
  SUBCASE("neither tracefs nor debugfs") {
    Completed c = in_mount_namespace(
        "umount /sys/kernel/debug/tracing 2>/dev/null; umount /sys/kernel/debug 2>/dev/null; "
        "umount /sys/kernel/tracing 2>/dev/null; true",
        args);
    INFO("stderr: " << c.err);
    CHECK(c.status.exited_with(1));
    CHECK(c.err.find("tracefs is not mounted") != std::string::npos);
    CHECK(c.err.find("mount -t tracefs") != std::string::npos);
  }
  SUBCASE("tracefs, but not under debugfs where libbcc looks") {
    Completed c = in_mount_namespace(
        "umount /sys/kernel/debug/tracing 2>/dev/null; umount /sys/kernel/debug 2>/dev/null; "
        "mountpoint -q /sys/kernel/tracing || mount -t tracefs none /sys/kernel/tracing",
        args);
    INFO("stderr: " << c.err);
    CHECK(c.status.exited_with(1));
    CHECK(c.err.find("/sys/kernel/debug/tracing") != std::string::npos);
    CHECK(c.err.find("mount -t debugfs") != std::string::npos);
  }
}

TEST_CASE("no kernel headers: libbcc's compile says so, exit 1; bpfql's own needs none") {
  BPFQL_REQUIRE_ROOT();
  if (!have("/usr/bin/unshare")) {
    MESSAGE("skipped: no /usr/bin/unshare");
    return;
  }
  TempDir empty;
  std::string hide = "mount --bind " + empty.path() + " /lib/modules || exit 99";
  std::vector<std::string> args = {query_file("exit-group.yml"), "--pid", "1", "--no-cache",
                                   "--stop-after", "100ms"};
  {
    // The one-pass compile of the plain C reads no header.
    Completed c = in_mount_namespace(hide, args);
    INFO("stderr: " << c.err);
    CHECK(c.status.exited_with(0));
  }
  {
    // libbcc does (USDT programs; here asked for).
    setenv("BPFQL_COMPILER", "libbcc", 1);
    Completed c = in_mount_namespace(hide, args);
    unsetenv("BPFQL_COMPILER");
    INFO("stderr: " << c.err);
    CHECK(c.status.exited_with(1));
    CHECK(c.err.find("no kernel headers") != std::string::npos);
    CHECK(c.err.find("scripts/setup-host.sh") != std::string::npos);
  }
}

TEST_CASE("a program the verifier rejects: why, exit 1; -v adds the verifier's log") {
  BPFQL_REQUIRE_ROOT();
  std::string query = query_file("verifier-too-complex.yml");
  Completed check = run_to_completion({BPFQL_BINARY, "check", query}, kExit);
  INFO("check stderr: " << check.err);
  REQUIRE_MESSAGE(check.status.exited_with(0), "the checker must accept the query");

  Completed plain = run_to_completion(bpfql_run({query}), kExit);
  INFO("stderr: " << plain.err);
  CHECK(plain.status.exited_with(1));
  CHECK(plain.err.find("the kernel's verifier rejected the program for query too-complex") !=
        std::string::npos);
  CHECK(plain.err.find("too complex to verify") != std::string::npos);
  CHECK(plain.err.find("run with -v") != std::string::npos);
  CHECK(plain.err.find("Tracing") == std::string::npos);

  Completed verbose = run_to_completion(bpfql_run({"-v", query}), milliseconds(120000));
  INFO("-v stderr (tail): " << verbose.err.substr(verbose.err.size() > 2000 ? verbose.err.size() - 2000 : 0));
  CHECK(verbose.status.exited_with(1));
  CHECK(verbose.err.find("BPF program is too large") != std::string::npos);
  CHECK(verbose.err.find("processed 1000001 insns") != std::string::npos);
}

TEST_CASE("a probe the kernel lacks (kprobes here): a clear message, exit 1") {
  BPFQL_REQUIRE_ROOT();
  if (::access("/sys/bus/event_source/devices/kprobe", F_OK) == 0 ||
      ::access("/sys/kernel/tracing/kprobe_events", F_OK) == 0) {
    MESSAGE("skipped: this kernel has kprobes");
    return;
  }
  Completed c = run_to_completion(bpfql_run({query_file("kprobe-missing.yml")}), kExit);
  INFO("stderr: " << c.err);
  CHECK(c.status.exited_with(1));
  CHECK(c.err.find("kprobe:do_sys_openat2") != std::string::npos);
  CHECK(c.err.find("kprobes are not available") != std::string::npos);
  CHECK(c.err.find("Tracing") == std::string::npos);
}

constexpr uint64_t cap_bit(int cap) { return uint64_t{1} << cap; }

TEST_CASE("after attach: no_new_privs and no capabilities; results and exit unchanged") {
  BPFQL_REQUIRE_ROOT();
  uint64_t eff = 0, prm = 0, bnd = 0, amb = 0;
  std::string nnp;
  TraceRun run = trace({.queries = {query_file("getppid-count.yml")},
                        .workload = {"getppid", "4321"},
                        .while_tracing = [&](const Process& bpfql) {
                          nnp = status_field(bpfql.pid(), "NoNewPrivs");
                          eff = status_mask(bpfql.pid(), "CapEff");
                          prm = status_mask(bpfql.pid(), "CapPrm");
                          bnd = status_mask(bpfql.pid(), "CapBnd");
                          amb = status_mask(bpfql.pid(), "CapAmb");
                        }});
  CHECK(nnp == "1");
  CHECK(eff == 0);
  CHECK(prm == 0);
  CHECK(bnd == 0);
  CHECK(amb == 0);
  CHECK(run.status.exited_with(0));
  CHECK(as_int(final_rows(run, "getppid-count")[0]["count()"]) == 4321);
}

TEST_CASE("after attach, user stacks keep only what symbolizing them needs") {
  BPFQL_REQUIRE_ROOT();
  uint64_t eff = 0, bnd = 0;
  std::string nnp;
  // One clock_nanosleep of 2.5 s: the 1 s print symbolizes its stack while the process lives.
  TraceRun run = trace({.queries = {query_file("sleep-stacks.yml")},
                        .workload = {"sleep", "2500"},
                        .while_tracing = [&](const Process& bpfql) {
                          nnp = status_field(bpfql.pid(), "NoNewPrivs");
                          eff = status_mask(bpfql.pid(), "CapEff");
                          bnd = status_mask(bpfql.pid(), "CapBnd");
                        }});
  INFO("bpfql stderr:\n" << run.err << "\nstdout:\n" << run.out);
  CHECK(nnp == "1");
  CHECK(eff == (cap_bit(CAP_SYS_PTRACE) | cap_bit(CAP_DAC_READ_SEARCH)));
  CHECK(bnd == eff);
  CHECK(run.status.exited_with(0));
  json first;
  for (const json& print : intervals_of(run, "sleep-stacks"))
    if (!print["rows"].empty()) {
      first = print["rows"];
      break;
    }
  REQUIRE_MESSAGE(first.is_array(), "no interval print had the sleep");
  REQUIRE(first.size() == 1);
  CHECK(as_int(first[0]["sleeps"]) == 1);
  // Symbolized after the drop: the innermost frame (in libc) has a name, not an address.
  INFO("stack: " << first[0]["ustack"].dump());
  REQUIRE(first[0]["ustack"].is_array());
  REQUIRE(!first[0]["ustack"].empty());
  CHECK(first[0]["ustack"][0].get<std::string>().rfind("0x", 0) != 0);
}

}  // namespace
}  // namespace bpfql::test
