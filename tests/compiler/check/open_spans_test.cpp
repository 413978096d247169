// `report: open`: a span query whose rows are its spans still open. What the loader accepts,
// what the checker refuses (and why), and what the Plan tells the runtime: where each key and
// aggregated value lies in the stored span, no value maps, and the span in its hash.
#include <doctest/doctest.h>

#include <string>

#include "compiler/codegen/codegen.h"
#include "compiler/syntax/query.h"
#include "compiler/syntax/print_query.h"
#include "support/check_helpers.h"

using bpfql::testing::check_error;
using bpfql::testing::check_yaml;

namespace {

// memleak's outstanding blocks, with `select` and `group_by` given.
std::string memleak(const std::string& select, const std::string& group_by = "",
                    const std::string& key = "{begin: retval, end: arg0}") {
  return "span:\n  begin: uretprobe:c:malloc\n  end: uprobe:c:free\n  key: " + key +
         "\n  report: open\nselect: " + select + "\n" +
         (group_by.empty() ? "" : "group_by: " + group_by + "\n");
}

bpfql::PlanQuery plan_of(const std::string& yaml) {
  auto program = check_yaml(yaml);
  REQUIRE_MESSAGE(program, program.error().message);
  auto plan = bpfql::generate_plan(*program);
  REQUIRE_MESSAGE(plan, plan.error().message);
  REQUIRE(plan->queries.size() == 1);
  return plan->queries[0];
}

}  // namespace

TEST_CASE("report: open or ended; anything else is an error with a did-you-mean") {
  auto loaded = bpfql::load_query_text("q.yml", memleak("count()"));
  REQUIRE(loaded.has_value());
  REQUIRE(loaded->queries[0].span);
  CHECK(loaded->queries[0].span->report_open.has_value());
  CHECK(check_error("span:\n  begin: uretprobe:c:malloc\n  end: uprobe:c:free\n"
                    "  key: {begin: retval, end: arg0}\n  report: opne\nselect: count()\n") ==
        "5:11: span 'report' is 'ended' (a row per ended span, the default), 'open' (the spans "
        "still open at each print) or 'flow' (a row per begin and per end, in order); did you "
        "mean 'open'?");
  CHECK(check_error("span:\n  begin: uretprobe:c:malloc\n  end: uprobe:c:free\n"
                    "  reprot: open\nselect: count()\n")
            .starts_with("4:3: unknown key 'reprot' in span"));
  // `report: ended` is the default, spelled out.
  auto ended = bpfql::load_query_text(
      "q.yml", "span:\n  begin: uretprobe:c:malloc\n  end: uprobe:c:free\n  report: ended\n"
               "select: count()\n");
  REQUIRE(ended.has_value());
  CHECK_FALSE(ended->queries[0].span->report_open.has_value());
}

TEST_CASE("report: open: keys are captures, aggregates take captures or age") {
  bpfql::PlanQuery q = plan_of(memleak(
      "[begin.comm as comm, begin.ustack as stack, count() as blocks, max(age) as oldest, "
      "sum(begin.ts) as t]",
      "[begin.comm, begin.ustack]"));
  CHECK(q.report_open);
  CHECK(q.value_map.empty());  // nothing is aggregated in the kernel
  CHECK_FALSE(q.open_span_map.empty());
  REQUIRE(q.open_keys.size() == 3);  // and begin.pid, for the stack's symbols
  REQUIRE(q.open_args.size() == 3);
  using K = bpfql::SpanValueSource::Kind;
  CHECK(q.open_keys[0].kind == K::Field);
  CHECK(q.open_keys[0].size == 16);  // comm
  CHECK(q.open_keys[1].size == 4);   // a stack id
  CHECK(q.open_args[0].kind == K::None);
  CHECK(q.open_args[1].kind == K::Age);
  CHECK(q.open_args[2].kind == K::Field);
  CHECK(q.open_args[2].offset == 0);  // begin.ts: the stored begin time
  CHECK(q.keep_stacks);
  for (const auto& a : q.aggregates) CHECK(a.map_name.empty());
}

TEST_CASE("report: open keeps even a span keyed by tid alone in its hash, and the end only consumes") {
  std::string yaml =
      "span:\n  begin: tracepoint:syscalls:sys_enter_nanosleep\n"
      "  end: tracepoint:syscalls:sys_exit_nanosleep\n  report: open\n"
      "select: [count() as sleeping, hist(age) as for]\n";
  bpfql::PlanQuery q = plan_of(yaml);
  CHECK_FALSE(q.open_span_map.empty());
  auto program = check_yaml(yaml);
  REQUIRE(program);
  auto plan = bpfql::generate_plan(*program);
  REQUIRE(plan);
  INFO(plan->c_source);
  CHECK(plan->c_source.find("BPF_HASH(q0_start") != std::string::npos);
  CHECK(plan->c_source.find("task_storage") == std::string::npos);
  CHECK(plan->c_source.find("q0_vals") == std::string::npos);
  CHECK(plan->c_source.find("q0_h") == std::string::npos);
  CHECK(plan->c_source.find("q0_start.delete(&skey)") != std::string::npos);
}

TEST_CASE("report: open: what does not exist at an open span is an error that says why") {
  CHECK(check_error(memleak("[count(), avg(duration)]")) ==
        "6:23: a span with 'report: open' lists spans that have not ended, so they have no "
        "duration; 'age' is the time since their begin (max(age) as oldest)");
  CHECK(check_error(memleak("count()", "comm")) ==
        "7:11: 'comm' is read at the end probe, but with 'report: open' the rows are spans that "
        "have not ended: a group_by key is what the begin captured (begin.EXPR); did you mean "
        "'begin.comm'?");
  CHECK(check_error(memleak("[count(), sum(arg0)]")) ==
        "6:23: 'arg0' is read at the end probe, but with 'report: open' the rows are spans that "
        "have not ended: an aggregated value is what the begin captured (begin.EXPR or age); did "
        "you mean 'begin.arg0'?");
  CHECK(check_error(memleak("[count(), sum(begin.retval * 2)]")) ==
        "6:23: 'begin.retval * 2': with 'report: open', an aggregated value is read off each "
        "open span at the print, so it is one capture itself (begin.EXPR or age); an expression "
        "over captures is not computed there");
  CHECK(check_error(memleak("[begin.comm, age]", "begin.comm")) ==
        "6:22: 'age' is measured at each print, over the spans still open: aggregate it "
        "(max(age) as oldest, hist(age))");
  CHECK(check_error(memleak("[begin.comm, begin.retval]")) ==
        "5:3: a span with 'report: open' aggregates the spans still open at each print: select "
        "aggregates over its captures (count(), max(age) as oldest, group_by: begin.ustack), not "
        "one row per event");
  // `age` belongs to open spans alone.
  CHECK(check_error("span:\n  begin: uretprobe:c:malloc\n  end: uprobe:c:free\n"
                    "  key: {begin: retval, end: arg0}\nselect: max(age)\n") ==
        "5:13: 'age' (the time an open span has been open, at a print) exists only in a span "
        "with 'report: open'");
  // `where` still chooses which end consumes a span: duration is fine there.
  CHECK(check_error(memleak("count()") + "where: duration > 1000\n") == "");
}

TEST_CASE("report: open has no SQL form: convert says so at `report`") {
  auto loaded = bpfql::load_query_text("q.yml", memleak("count()"));
  REQUIRE(loaded.has_value());
  auto sql = bpfql::print_sql(*loaded);
  REQUIRE_FALSE(sql.has_value());
  CHECK(sql.error().loc.line == 5);
  CHECK(sql.error().message ==
        "a span with 'report: open' has no SQL form: a JOIN's rows are the pairs that met, and "
        "these rows are the begins still waiting for their end");
  // The YAML printer keeps it.
  auto yaml = bpfql::print_yaml(*loaded);
  REQUIRE(yaml.has_value());
  CHECK(yaml->find("  report: open\n") != std::string::npos);
}

TEST_CASE("a stack captured at the begin is a user stack, symbolized with the begin's process") {
  // Ended spans (mm/memleak) as open ones: `begin.ustack` was decoded as a kernel stack (raw
  // addresses), and no process was known to read its symbols with.
  for (bool open : {false, true}) {
    CAPTURE(open);
    std::string yaml = "span:\n  begin: uretprobe:c:malloc\n  end: uprobe:c:free\n"
                       "  key: {begin: retval, end: arg0}\n" +
                       std::string(open ? "  report: open\n" : "") +
                       "select: [begin.ustack as stack, count()]\ngroup_by: begin.ustack\n";
    bpfql::PlanQuery q = plan_of(yaml);
    REQUIRE(q.keys.size() == 2);
    CHECK(q.keys[0].kind == bpfql::ValueKind::UserStack);
    CHECK(q.keys[1].name == "pid");  // grouped by, not printed
    auto program = check_yaml(yaml);
    REQUIRE(program);
    CHECK(program->queries[0].keys[1].expr->text == "begin.pid");
  }
}

TEST_CASE("age is a builtin only in a span with report: open; elsewhere the name is free") {
  // A macro (or a tracepoint field: writeback:writeback_queue_io has one) may be called age.
  CHECK(check_error("macros:\n  age: args.count\nprobe: tracepoint:syscalls:sys_enter_read\n"
                    "select: sum(age)\n") == "");
  CHECK(check_error("probe: tracepoint:syscalls:sys_enter_read\nselect: sum(age)\n") ==
        "2:13: 'age' (the time an open span has been open, at a print) exists only in a span "
        "with 'report: open'");
}

TEST_CASE("report: open: an end-side expression gets no did-you-mean that would be refused too") {
  CHECK(check_error(memleak("[count(), sum(arg0 + 1)]")) ==
        "6:23: 'arg0 + 1' is read at the end probe, but with 'report: open' the rows are spans "
        "that have not ended: an aggregated value is what the begin captured (begin.EXPR or age)");
}
