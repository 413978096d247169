// Stacks and symbols on the real kernel: ustack on a uprobe and a uretprobe (the targets are built
// with frame pointers), kstack on a tracepoint, CPU profiles, `-f folded`, and ksym()/usym().
//
// User addresses are symbolized with the process's memory map, so these queries print while the
// process lives (an interval; the targets linger or keep busy). A uprobe fires at the function's
// first instruction, before it saved its caller's frame pointer: the walk starts at the probed
// function and continues from the caller's caller, so bpfql_target_add's entry stack reads
// main → bpfql_target_add, while its return (back in bpfql_target_run) reads main →
// bpfql_target_run. bpftrace and perf show the same.
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"
#include "tests/integration/kernel_state.h"

namespace bpfql::test {
namespace {

struct FoldedLine {
  std::string frames;  // "a;b;c"
  int64_t count = 0;
};

// `-f folded` output: "a;b;c COUNT" lines.
std::vector<FoldedLine> folded_lines(const std::string& out) {
  std::vector<FoldedLine> lines;
  for (const std::string& line : split_lines(out)) {
    if (line.empty()) continue;
    size_t space = line.rfind(' ');
    INFO("line: " << line);
    REQUIRE_MESSAGE(space != std::string::npos, "a folded line is 'frames COUNT'");
    std::string count = line.substr(space + 1);
    bool numeric = !count.empty() && count.find_first_not_of("0123456789") == std::string::npos;
    REQUIRE_MESSAGE(numeric, "the count of a folded line is a number");
    lines.push_back({line.substr(0, space), std::stoll(count)});
  }
  return lines;
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// The count of the last line whose frames end with `leaf` (with cumulative prints, the final one).
int64_t last_count_ending(const std::vector<FoldedLine>& lines, const std::string& leaf) {
  int64_t count = -1;
  for (const FoldedLine& line : lines)
    if (ends_with(line.frames, leaf)) count = line.count;
  return count;
}

TraceRun uprobe_stacks(const std::string& format, int64_t calls) {
  return trace({.queries = {query_file("uprobe-stacks.yml")},
                .params = {{"target", BPFQL_UPROBE_TARGET}},
                .pass_pid = false,
                .command = {BPFQL_UPROBE_TARGET, std::to_string(calls), "1000"},
                .format = format});
}

TEST_CASE("-f folded: user stacks of a uprobe and a uretprobe through the target's functions") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = uprobe_stacks("folded", 30);
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  std::vector<FoldedLine> lines = folded_lines(run.out);
  REQUIRE(!lines.empty());
  // Root first, leaf last, function names without offsets.
  CHECK(last_count_ending(lines, ";main;bpfql_target_add") == 30);
  CHECK(last_count_ending(lines, ";main;bpfql_target_run") == 30);
  for (const FoldedLine& line : lines) {
    INFO("line: " << line.frames);
    CHECK(line.frames.find("+0x") == std::string::npos);
  }
}

TEST_CASE("ustack in JSON: symbolized frames, innermost first") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = uprobe_stacks("json", 12);
  json entry = final_rows(run, "entry-stacks");
  REQUIRE(entry.size() == 1);
  CHECK(as_int(entry[0]["calls"]) == 12);
  json stack = entry[0]["ustack"];
  INFO("ustack: " << stack.dump());
  REQUIRE(stack.is_array());
  REQUIRE(stack.size() >= 2);
  CHECK(stack[0] == "bpfql_target_add");
  CHECK(stack[1].get<std::string>().rfind("main+0x", 0) == 0);
  json ret = final_rows(run, "return-stacks");
  REQUIRE(ret.size() == 1);
  INFO("return ustack: " << ret[0]["ustack"].dump());
  CHECK(ret[0]["ustack"][0].get<std::string>().rfind("bpfql_target_run+0x", 0) == 0);
  CHECK(ret[0]["ustack"][1].get<std::string>().rfind("main+0x", 0) == 0);
}

TEST_CASE("ustack in the table: one frame per line under the row") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = uprobe_stacks("table", 5);
  INFO("stdout:\n" << run.out);
  CHECK(run.out.find("  ustack:\n    bpfql_target_add\n    main+0x") != std::string::npos);
}

TEST_CASE("kstack of a system call tracepoint: the kernel's syscall path, symbolized") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("getppid-kstack.yml")}, .workload = {"getppid", "25"}});
  json rows = final_rows(run, "getppid-kstack");
  REQUIRE(!rows.empty());
  int64_t calls = 0;
  for (const json& row : rows) {
    calls += as_int(row["calls"]);
    INFO("kstack: " << row["kstack"].dump());
    bool through_syscall_entry = false;
    for (const json& frame : row["kstack"]) {
      std::string f = frame.get<std::string>();
      CHECK(f.rfind("0x", 0) != 0);  // every frame has a name
      if (f.rfind("do_syscall_64", 0) == 0) through_syscall_entry = true;
    }
    CHECK(through_syscall_entry);
  }
  CHECK(calls == 25);
}

TEST_CASE("streamed kstack: every event carries its own symbolized kernel stack") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  // Only the kernel query: the uprobe one is exercised below on its target.
  std::string query = dir.write("kstack-events.yml", R"(name: getppid-kstack-events
params:
  pid: {type: int}
probe: tracepoint:syscalls:sys_enter_getppid
where: pid == $pid
select: [tid, kstack]
)");
  TraceRun run = trace({.queries = {query}, .workload = {"getppid", "40"}});
  std::vector<json> events = events_of(run, "getppid-kstack-events");
  CHECK(events.size() == 40);
  for (const json& event : events) {
    INFO("event: " << event.dump());
    REQUIRE(event["kstack"].is_array());
    bool through_syscall_entry = false;
    for (const json& frame : event["kstack"]) {
      std::string f = frame.get<std::string>();
      CHECK(f.rfind("0x", 0) != 0);  // every frame has a name
      if (f.rfind("do_syscall_64", 0) == 0) through_syscall_entry = true;
    }
    CHECK(through_syscall_entry);
  }
}

TEST_CASE("kstack where a raw tracepoint would do otherwise: starts at the tracepoint's caller") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string query = dir.write("fork-kstack.yml", R"(name: fork-kstack
params:
  pid: {type: int}
probe: tracepoint:sched:sched_process_fork
where: pid == $pid
select: [ts, kstack]
)");
  std::vector<std::string> raw = {"not read"};
  TraceRun run = trace({.queries = {query},
                        .workload = {"fork", "3"},
                        .while_tracing = [&](const Process& bpfql) {
                          raw = raw_tracepoints_held_by(bpfql.pid());
                        }});
  CHECK(raw.empty());  // a kernel stack keeps it an ordinary tracepoint
  std::vector<json> events = events_of(run, "fork-kstack");
  REQUIRE(events.size() == 3);
  for (const json& event : events) {
    INFO("kstack: " << event["kstack"].dump());
    REQUIRE(!event["kstack"].empty());
    bool through_clone = false;
    for (const json& frame : event["kstack"]) {
      std::string f = frame.get<std::string>();
      CHECK(f.rfind("bpf_", 0) != 0);  // no frame of the BPF program or its dispatch
      if (f.rfind("kernel_clone", 0) == 0) through_clone = true;
    }
    CHECK(through_clone);
  }
}

// The target sleeps 3 s after its calls, then exits: its stacks are symbolized only if bpfql reads
// the events while it sleeps. The perf buffer's wakeup waited for the idle CPU's next timer (the
// sleep's end) in about half of the runs; bpfql reads streams every 100 ms besides.
TEST_CASE("streamed ustack: each uprobe event has the target's frames, innermost first") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("stream-stacks.yml")},
                        .params = {{"target", BPFQL_UPROBE_TARGET}},
                        .pass_pid = false,
                        .command = {BPFQL_UPROBE_TARGET, "7", "3000"}});
  INFO("stderr:\n" << run.err << "workload: " << run.workload_pid);
  std::vector<json> events = events_of(run, "add-ustack-events");
  REQUIRE(events.size() == 7);
  for (size_t i = 0; i < events.size(); ++i) {
    const json& event = events[i];
    INFO("event: " << event.dump());
    CHECK(as_int(event["i"]) == static_cast<int64_t>(i));
    REQUIRE(event["ustack"].is_array());
    REQUIRE(event["ustack"].size() >= 2);
    CHECK(event["ustack"][0] == "bpfql_target_add");
    CHECK(event["ustack"][1].get<std::string>().rfind("main+0x", 0) == 0);
  }
  CHECK(events_of(run, "getppid-kstack-events").empty());  // pid -1: no process
}

TEST_CASE("a CPU profile of a busy process, folded: its samples go through main") {
  BPFQL_REQUIRE_ROOT();
  // One CPU second of spinning (do_spin is inlined into main), then a pause before exiting.
  TraceRun run = trace({.queries = {query_file("profile-stacks.yml")},
                        .workload = {"spin", "1000", "sleep", "300"},
                        .format = "folded"});
  INFO("stdout:\n" << run.out);
  std::vector<FoldedLine> lines = folded_lines(run.out);
  int64_t total = 0, through_main = 0;
  for (const FoldedLine& line : lines) {
    total += line.count;
    if (line.frames.find(";main;") != std::string::npos || ends_with(line.frames, ";main"))
      through_main += line.count;
  }
  CHECK(total >= 80);
  CHECK(total <= 110);
  int64_t at_least = total * 9;
  CHECK(through_main * 10 >= at_least);  // 90% or more
}

TEST_CASE("ksym() names a kernel function: the hrtimer callback of clock_nanosleep") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("hrtimer-ksym.yml")}, .workload = {"sleep", "3", "3", "3"}});
  // The kernel may arm other timers in the workload's context (a cgroup's CPU-bandwidth period
  // timer on a machine that limits CPU, for one); the sleeps' timers are exactly three.
  json rows = final_rows(run, "hrtimer-ksym");
  CHECK(as_int(row_where(rows, {{"callback", "hrtimer_wakeup"}})["timers"]) == 3);
  for (const json& row : rows) CHECK(row["callback"].is_string());

  TraceRun csv = trace({.queries = {query_file("hrtimer-ksym.yml")},
                        .workload = {"sleep", "3", "3"},
                        .format = "csv"});
  INFO("csv:\n" << csv.out);
  std::vector<std::string> lines = split_lines(csv.out);
  REQUIRE(lines.size() >= 2);
  CHECK(lines[0] == "query,time,callback,timers");
  int wakeup_lines = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].find(",hrtimer_wakeup,") == std::string::npos) continue;
    ++wakeup_lines;
    CHECK(ends_with(lines[i], ",hrtimer_wakeup,2"));
  }
  CHECK(wakeup_lines == 1);
}

TEST_CASE("usym() names a user function from its address, in JSON and the table") {
  BPFQL_REQUIRE_ROOT();
  auto run_as = [](const std::string& format) {
    return trace({.queries = {query_file("usym-note.yml")},
                  .params = {{"target", BPFQL_UPROBE_TARGET}},
                  .pass_pid = false,
                  .command = {BPFQL_UPROBE_TARGET, "3", "1000"},
                  .format = format});
  };
  TraceRun json_run = run_as("json");
  json rows = final_rows(json_run, "usym-note");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["code"] == "bpfql_target_run");
  CHECK(as_int(rows[0]["notes"]) == 1);

  TraceRun table = run_as("table");
  INFO("stdout:\n" << table.out);
  CHECK(table.out.find("bpfql_target_run") != std::string::npos);
  CHECK(table.out.find("0x") == std::string::npos);
}


// Entries of the stack maps named `name` that bpftool sees (-1 when bpftool fails).
// Entries of the map named `name` that process `pid` holds: by id, since maps of the same name
// from earlier runs may still be in the kernel (their programs wait in the detach helper).
int stack_map_entries(pid_t pid, const std::string& name) {
  for (uint32_t id : bpf_maps_held_by(pid)) {
    std::string sid = std::to_string(id);
    Completed show = run_to_completion({"/usr/sbin/bpftool", "-j", "map", "show", "id", sid}, milliseconds{10000});
    json info = json::parse(show.out, nullptr, false);
    if (!info.is_object() || info.value("name", "") != name) continue;
    Completed dump = run_to_completion({"/usr/sbin/bpftool", "-j", "map", "dump", "id", sid}, milliseconds{10000});
    if (!dump.status.exited_with(0)) return -1;
    json entries = json::parse(dump.out, nullptr, false);
    return entries.is_array() ? static_cast<int>(entries.size()) : -1;
  }
  return -1;
}

TEST_CASE("interval prints free the stacks they read: a long run does not fill the stack map") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("kstacks.yml",
                            "name: kstacks\nparams:\n  pid: {type: int}\n"
                            "probe: tracepoint:syscalls:sys_enter_getppid\nwhere: pid == $pid\n"
                            "select: [kstack, count() as calls]\ngroup_by: kstack\ninterval: 200ms\n");
  int left = -2;
  pid_t bpfql_pid = -1;
  TraceRun run = trace({.queries = {q},
                        .workload = {"getppid", "25", "sleep", "450", "getppid", "25"},
                        .while_tracing = [&](const Process& bpfql) { bpfql_pid = bpfql.pid(); },
                        .after_workload = [&] {
                          std::this_thread::sleep_for(milliseconds{700});  // two prints after the last call
                          left = stack_map_entries(bpfql_pid, "q0_stacks");
                        }});
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  CHECK(left == 0);
  // Every print still shows named frames: releasing happens after the rows are made.
  int64_t calls = 0;
  for (const json& record : intervals_of(run, "kstacks"))
    for (const json& row : record["rows"]) {
      calls += as_int(row["calls"]);
      INFO("kstack: " << row["kstack"].dump());
      CHECK(!row["kstack"].empty());
    }
  CHECK(calls == 50);
}

}  // namespace
}  // namespace bpfql::test
