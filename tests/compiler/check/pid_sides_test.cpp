// --pid on a span filters only the sides whose probes run in the task the span is about: the
// task switched out at a sched_switch keyed by prev_pid, any task keyed by pid or tid; and a
// span whose sides all run elsewhere is an error, not an empty answer.
#include <doctest/doctest.h>

#include <string>

#include "compiler/codegen/codegen.h"
#include "support/check_helpers.h"

using bpfql::CheckOptions;
using bpfql::testing::check_yaml;

namespace {

CheckOptions with_pid() {
  CheckOptions options;
  options.pid = 4321;
  return options;
}

// Where the first query's span filters on the pid (by value: the program is a temporary).
struct PidSides {
  bool pid_at_begin = false;
  bool pid_at_end = false;
};

PidSides checked(const bpfql::Result<bpfql::CheckedProgram>& program) {
  REQUIRE_MESSAGE(program, program.error().message);
  const bpfql::CheckedQuery& q = program->queries[0];
  return {q.pid_at_begin, q.pid_at_end};
}

std::string c_of(const std::string& yaml) {
  auto program = check_yaml(yaml, {}, with_pid());
  REQUIRE_MESSAGE(program, program.error().message);
  auto plan = bpfql::generate_plan(*program);
  REQUIRE_MESSAGE(plan, plan.error().message);
  return plan->c_source;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const char* kOffcpu = R"(span:
  begin: tracepoint:sched:sched_switch
  end: tracepoint:sched:sched_switch
  key: {begin: args.prev_pid, end: args.next_pid}
select: [begin.kstack as stack, sum(duration) as ns]
group_by: begin.kstack
)";

const char* kCpudist = R"(span:
  begin: tracepoint:sched:sched_switch
  end: tracepoint:sched:sched_switch
  key: {begin: args.next_pid, end: args.prev_pid}
select: hist(duration)
)";

const char* kWakeup = R"(span:
  begin: tracepoint:sched:sched_switch
  end: tracepoint:sched:sched_wakeup
  key: {begin: args.prev_pid, end: args.pid}
select: [comm, sum(duration)]
group_by: comm
)";

}  // namespace

TEST_CASE("--pid on a sched_switch span: at the side keyed by the task switched out only") {
  const PidSides off = checked(check_yaml(kOffcpu, {}, with_pid()));
  CHECK(off.pid_at_begin);
  CHECK_FALSE(off.pid_at_end);  // the end runs in the task the one switched in displaces
  const PidSides dist = checked(check_yaml(kCpudist, {}, with_pid()));
  CHECK_FALSE(dist.pid_at_begin);
  CHECK(dist.pid_at_end);
  const PidSides wake = checked(check_yaml(kWakeup, {}, with_pid()));
  CHECK(wake.pid_at_begin);
  CHECK_FALSE(wake.pid_at_end);  // sched_wakeup runs in the waker
  // One filter in the program, not two: before the fix the end's filtered the wrong task.
  CHECK(count_of(c_of(kOffcpu), "/* --pid */") == 1);
  CHECK(count_of(c_of(kWakeup), "/* --pid */") == 1);
}

TEST_CASE("--pid on a span of the task's own probes filters both sides, as before") {
  const PidSides q = checked(check_yaml(
      "span: {begin: tracepoint:syscalls:sys_enter_read, end: tracepoint:syscalls:sys_exit_read}\n"
      "select: count()\n",
      {}, with_pid()));
  CHECK(q.pid_at_begin);
  CHECK(q.pid_at_end);
  // Keyed by tid, a foreign tracepoint's side is the current task's too.
  const PidSides tid = checked(check_yaml(
      "span: {begin: tracepoint:sched:sched_switch, end: tracepoint:sched:sched_wakeup, key: tid}\n"
      "select: count()\n",
      {}, with_pid()));
  CHECK(tid.pid_at_begin);
  CHECK(tid.pid_at_end);
}

TEST_CASE("--pid on a span whose probes all run in other tasks is an error at the begin") {
  const char* runqlat = R"(span:
  begin: tracepoint:sched:sched_wakeup
  end: tracepoint:sched:sched_switch
  key: {begin: args.pid, end: args.next_pid}
select: hist(duration)
)";
  auto program = check_yaml(runqlat, {}, with_pid());
  REQUIRE_FALSE(program);
  CHECK(program.error().message ==
        "--pid cannot pick this span's process: neither 'tracepoint:sched:sched_wakeup' nor "
        "'tracepoint:sched:sched_switch' runs in the task its key names (args.pid; args.next_pid); "
        "filter on the key instead (begin_where: args.pid == TID, one thread)");
  CHECK(program.error().loc.line == 2);
  // Without --pid the same span checks.
  CHECK(check_yaml(runqlat));
}

TEST_CASE("--pid on an irq's entry and exit filters both: they run in the task interrupted") {
  const PidSides q = checked(check_yaml(
      "span:\n  begin: tracepoint:irq:softirq_entry\n  end: tracepoint:irq:softirq_exit\n"
      "  key: [cpu, args.vec]\nselect: count()\n",
      {}, with_pid()));
  CHECK(q.pid_at_begin);
  CHECK(q.pid_at_end);
}
