// Spans as joins: the forms of `begin`, `end` and `key`, captures (`begin.EXPR`), the checker's
// errors and warnings, and the order of the generated statements (where before consume, end
// before begin on a probe that is both).
#include <doctest/doctest.h>

#include <string>

#include "compiler/codegen/codegen.h"
#include "support/check_helpers.h"

using bpfql::testing::check_error;
using bpfql::testing::check_yaml;

namespace {

std::string c_of(const std::string& yaml) {
  auto program = check_yaml(yaml);
  REQUIRE_MESSAGE(program, program.error().message);
  auto plan = bpfql::generate_plan(*program);
  REQUIRE_MESSAGE(plan, plan.error().message);
  return plan->c_source;
}

size_t at(const std::string& c, const std::string& text) {
  size_t pos = c.find(text);
  INFO("looking for: " << text << "\nin:\n" << c);
  REQUIRE(pos != std::string::npos);
  return pos;
}

const char* kRunqlat = R"(span:
  begin: [tracepoint:sched:sched_wakeup, tracepoint:sched:sched_wakeup_new]
  end: tracepoint:sched:sched_switch
  key: {begin: args.pid, end: args.next_pid}
select: hist(duration)
)";

}  // namespace

TEST_CASE("span: a list of begin probes and a key per side") {
  auto program = check_yaml(kRunqlat);
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries[0];
  REQUIRE(q.span);
  CHECK(q.span->begin.size() == 2);
  CHECK(q.span->begin_key.at(0)->text == "args.pid");
  CHECK(q.span->end_key.at(0)->text == "args.next_pid");
  CHECK(q.warnings.empty());
}

TEST_CASE("span: composite keys pair the sides one to one; a mismatch is an error at `key`") {
  auto program = check_yaml(
      "span:\n  begin: tracepoint:block:block_rq_issue\n  end: tracepoint:block:block_rq_complete\n"
      "  key: [args.dev, args.sector]\nselect: count()\n");
  REQUIRE_MESSAGE(program, program.error().message);
  CHECK(program->queries[0].span->composite());
  CHECK(check_error("span:\n  begin: tracepoint:block:block_rq_issue\n"
                    "  end: tracepoint:block:block_rq_complete\n"
                    "  key: {begin: [args.dev, args.sector], end: args.dev}\nselect: count()\n") ==
        "4:8: the span key has 2 expressions at the begin and 1 at the end; a composite key "
        "pairs them one to one");
  CHECK(check_error("span:\n  begin: tracepoint:block:block_rq_issue\n"
                    "  end: tracepoint:block:block_rq_complete\n"
                    "  key: {begin: args.dev}\nselect: count()\n") ==
        "4:8: a per-side span key names both sides: {begin: EXPR, end: EXPR} (no 'end')");
  CHECK(check_error("span:\n  begin: tracepoint:block:block_rq_issue\n"
                    "  end: tracepoint:block:block_rq_complete\n"
                    "  key: {begin: args.dev, end: args.dev, both: 1}\nselect: count()\n")
            .find("unknown key 'both' in span key") != std::string::npos);
  // Each side is typed at its own probes: the end has no field `nr_sector`... it does; `bytes`
  // exists only at the issue.
  CHECK(check_error("span:\n  begin: tracepoint:block:block_rq_issue\n"
                    "  end: tracepoint:block:block_rq_complete\n"
                    "  key: args.bytes\nselect: count()\n")
            .starts_with("4:8: "));
  CHECK(check_error("span:\n  begin: tracepoint:block:block_rq_issue\n"
                    "  end: tracepoint:block:block_rq_complete\n"
                    "  key: args.rwbs\nselect: count()\n")
            .starts_with("4:8: a span key must be an integer"));
}

TEST_CASE("span: begin.EXPR is typed at the begin and usable in where, select and group_by") {
  auto program = check_yaml(R"(span:
  begin: tracepoint:syscalls:sys_enter_openat
  end: tracepoint:syscalls:sys_exit_openat
where: [begin.comm == "cat", duration > 10ms]
select: [begin.args.filename as path, retval, begin.ts, count()]
group_by: [begin.args.filename, retval, begin.ts]
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& span = *program->queries[0].span;
  // Each distinct capture once; begin.ts is the stored begin time itself.
  REQUIRE(span.captures.size() == 2);
  CHECK(span.captures[0]->text == "comm");
  CHECK(span.captures[1]->text == "args.filename");
  CHECK(span.captures[1]->type.is_string());
}

TEST_CASE("span: an unused capture costs nothing; a span without captures stores its time alone") {
  std::string c = c_of(
      "span:\n  begin: tracepoint:syscalls:sys_enter_read\n  end: tracepoint:syscalls:sys_exit_read\n"
      "  key: pid\nselect: count()\n");
  CHECK(c.find("struct q0_span") == std::string::npos);
  CHECK(c.find("BPF_HASH(q0_start, u64, u64") != std::string::npos);
}

TEST_CASE("span: captures are errors where they cannot mean anything") {
  CHECK(check_error("probe: tracepoint:syscalls:sys_exit_read\nselect: begin.comm\n") ==
        "2:9: 'begin.comm': 'begin.' names a value of a span's begin, usable only at its end (in "
        "where, select and group_by of a query with `span:`)");
  CHECK(check_error("span:\n  begin: tracepoint:syscalls:sys_enter_read\n"
                    "  end: tracepoint:syscalls:sys_exit_read\n  begin_where: begin.pid == 1\n"
                    "select: count()\n")
            .starts_with("4:16: 'begin.pid': 'begin.' names a value"));
  CHECK(check_error("span:\n  begin: tracepoint:syscalls:sys_enter_read\n"
                    "  end: tracepoint:syscalls:sys_exit_read\nselect: begin.duration\n") ==
        "4:15: 'duration' exists only in span queries (at the end probe)");
  CHECK(check_error("span:\n  begin: tracepoint:syscalls:sys_enter_read\n"
                    "  end: tracepoint:syscalls:sys_exit_read\nselect: begin.args.ret\n")
            .starts_with("4:15: "));
  CHECK(check_error("span:\n  begin: tracepoint:syscalls:sys_enter_read\n"
                    "  end: tracepoint:syscalls:sys_exit_read\nselect: [begin.kstack, duration]\n") ==
        "4:10: 'begin.kstack': a stack captured at the begin is kept as a stack id, which a "
        "streamed event cannot carry; group by it instead (select: count(), group_by: "
        "begin.kstack)");
  CHECK(check_error("span:\n  begin: tracepoint:syscalls:sys_enter_read\n"
                    "  end: tracepoint:syscalls:sys_exit_read\nselect: begin.\n") ==
        "4:15: expected an expression after 'begin.' (such as begin.comm)");
}

TEST_CASE("arg0.. at a return probe is an error that says why") {
  CHECK(check_error("probe: uretprobe:c:malloc\nselect: arg0\n") ==
        "2:9: 'arg0' does not exist at the return probe 'uretprobe:/usr/lib/x86_64-linux-gnu/libc.so.6:"
        "malloc': the argument registers are overwritten by the time the function returns; did you "
        "mean 'entry.arg0' (the value it had at the call's entry)?");
  // ... and a span from the entry checks too.
  auto program = check_yaml("span:\n  begin: uprobe:c:malloc\n  end: uretprobe:c:malloc\n"
                            "select: [begin.arg0 as size, retval as address]\n");
  CHECK_MESSAGE(program, program.error().message);
}

TEST_CASE("a span keyed by pid across tracepoints of different tasks gets a warning") {
  auto program = check_yaml(R"(span:
  begin: tracepoint:sched:sched_wakeup
  end: tracepoint:sched:sched_switch
  key: pid
select: count()
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& warnings = program->queries[0].warnings;
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0].message ==
        "the span's begin key 'pid' reads the current task, but 'tracepoint:sched:sched_wakeup' "
        "runs in the waker (the task that wakes the other up): the key names another task than "
        "the event is about (key this side by args.pid)");
  CHECK(warnings[1].message.starts_with("the span's end key 'pid' reads the current task, but "
                                        "'tracepoint:sched:sched_switch' runs in the task switched "
                                        "out"));
  // The default key (tid) at the same tracepoints warns too; syscalls do not.
  auto implicit = check_yaml(
      "span:\n  begin: tracepoint:sched:sched_wakeup\n  end: tracepoint:sched:sched_switch\n"
      "select: count()\n");
  REQUIRE(implicit);
  CHECK(implicit->queries[0].warnings.size() == 2);
  auto syscalls = check_yaml(
      "span:\n  begin: tracepoint:syscalls:sys_enter_read\n  end: tracepoint:syscalls:sys_exit_read\n"
      "select: count()\n");
  REQUIRE(syscalls);
  CHECK(syscalls->queries[0].warnings.empty());
  // Keyed by the event's own fields: no warning.
  auto fields = check_yaml(kRunqlat);
  REQUIRE(fields);
  CHECK(fields->queries[0].warnings.empty());
}

TEST_CASE("span end: filters without span values before the lookup, the rest after; consumed last") {
  std::string c = c_of(R"(span:
  begin: tracepoint:syscalls:sys_enter_openat
  end: tracepoint:syscalls:sys_exit_openat
  key: pid
where: [retval < 0, duration > 1000, begin.comm == "cat"]
select: [begin.args.filename as path, duration]
)");
  size_t end = at(c, "int q0_p0(");
  size_t cheap = c.find("args_ret < 0", end);
  size_t lookup = c.find("q0_start.lookup(&skey)", end);
  size_t slow = c.find("duration > 1000", end);
  size_t submit = c.find("perf_submit", end);
  size_t consume = c.find(".delete(&skey)", end);
  REQUIRE(cheap != std::string::npos);
  REQUIRE(lookup != std::string::npos);
  REQUIRE(slow != std::string::npos);
  REQUIRE(consume != std::string::npos);
  CHECK(cheap < lookup);
  CHECK(lookup < slow);
  CHECK(slow < submit);
  CHECK(submit < consume);
  // Nothing between the lookup and the filters deletes the span.
  CHECK(c.find(".delete(", end) == consume);
  // The captured name is read at the begin into the stored value, and copied from it at the end.
  CHECK(c.find("bpf_probe_read_user_str(sv.begin_args_filename") != std::string::npos);
  CHECK(c.find("__builtin_memcpy(ev.path, sp->begin_args_filename, 64);") != std::string::npos);
}

TEST_CASE("a probe that both ends and begins: one program, the end first") {
  std::string c = c_of(R"(span:
  begin: tracepoint:sched:sched_switch
  end: tracepoint:sched:sched_switch
  key: {begin: args.prev_pid, end: args.next_pid}
select: sum(duration)
group_by: begin.comm
)");
  CHECK(c.find("q0_b0") == std::string::npos);  // no begin program of its own
  size_t main = at(c, "int q0_p0(struct tp_sched_sched_switch *args) {");
  size_t end_call = c.find("q0_p0_end(args);", main);
  size_t begin_call = c.find("q0_p0_begin(args);", main);
  REQUIRE(end_call != std::string::npos);
  REQUIRE(begin_call != std::string::npos);
  CHECK(end_call < begin_call);
}

TEST_CASE("a span ending where the aggregate map is full still ends") {
  std::string c = c_of(
      "span:\n  begin: tracepoint:syscalls:sys_enter_read\n  end: tracepoint:syscalls:sys_exit_read\n"
      "  key: pid\nselect: count()\ngroup_by: comm\n");
  size_t full = at(c, "goto q0_done;");
  size_t done = at(c, "q0_done:");
  size_t consume = at(c, "q0_start.delete(&skey);");
  CHECK(full < done);
  CHECK(done < consume);
}
