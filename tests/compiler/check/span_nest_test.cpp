// `nest: true`, `depth`, `report: flow` and flow(): what the loader accepts, what the checker
// refuses (and where, and why), and what the Plan and the C say: a per-thread stack of begins,
// begin rows written at the begin probe, and the marks the runtime indents flow() by.
#include <doctest/doctest.h>

#include <string>

#include "compiler/codegen/codegen.h"
#include "compiler/syntax/print_query.h"
#include "compiler/syntax/query.h"
#include "support/check_helpers.h"

using bpfql::testing::check_error;
using bpfql::testing::check_yaml;

namespace {

const char* kEntry = "usdt:/usr/bin/python3.11:python:function__entry";
const char* kReturn = "usdt:/usr/bin/python3.11:python:function__return";

// Python's calls as a span; `extra` is more span keys (each "  key: value\n").
std::string python_span(const std::string& extra, const std::string& rest) {
  return std::string("span:\n  begin: ") + kEntry + "\n  end: " + kReturn + "\n" + extra + rest;
}

std::string flow(const std::string& select, const std::string& more = "") {
  return python_span("  nest: true\n  report: flow\n", "select: " + select + "\n" + more);
}

bpfql::Plan plan_of(const std::string& yaml) {
  auto program = check_yaml(yaml);
  REQUIRE_MESSAGE(program, program.error().message);
  auto plan = bpfql::generate_plan(*program);
  REQUIRE_MESSAGE(plan, plan.error().message);
  REQUIRE(plan->queries.size() == 1);
  return *plan;
}

}  // namespace

TEST_CASE("nest: true or false, report: flow; anything else is an error with a did-you-mean") {
  auto loaded = bpfql::load_query_text("q.yml", flow("tid"));
  REQUIRE(loaded.has_value());
  const auto& span = *loaded->queries[0].span;
  CHECK(span.nest.has_value());
  CHECK(span.report_flow.has_value());
  CHECK(check_error(python_span("  nest: ture\n", "select: count()\n")) ==
        "4:9: span 'nest' is true (a thread's spans nest like calls: an end closes the innermost "
        "open one) or false (the default), not 'ture'; did you mean 'true'?");
  CHECK(check_error(python_span("  report: flwo\n", "select: count()\n")) ==
        "4:11: span 'report' is 'ended' (a row per ended span, the default), 'open' (the spans "
        "still open at each print) or 'flow' (a row per begin and per end, in order); did you "
        "mean 'flow'?");
  CHECK(check_error(python_span("  nset: true\n", "select: count()\n"))
            .starts_with("4:3: unknown key 'nset' in span; did you mean 'nest'?"));
  auto off = bpfql::load_query_text("q.yml", python_span("  nest: false\n", "select: count()\n"));
  REQUIRE(off.has_value());
  CHECK_FALSE(off->queries[0].span->nest.has_value());
}

TEST_CASE("nest: its key is tid, and no begin condition keeps a begin out") {
  CHECK(check_error(python_span("  nest: true\n", "select: [count(), hist(duration)]\n")) == "");
  CHECK(check_error(python_span("  nest: true\n  key: pid\n", "select: count()\n")) ==
        "4:3: 'nest: true' nests the spans of one thread like calls (a per-thread stack of "
        "begins), so its key is 'tid' (the default), not 'pid'");
  CHECK(check_error(python_span("  nest: true\n  key: [tid, arg2]\n", "select: count()\n"))
            .starts_with("4:3: 'nest: true' nests the spans of one thread like calls"));
  CHECK(check_error(python_span("  nest: true\n  begin_where: arg2 > 1\n", "select: count()\n")) ==
        "5:16: begin_where 'arg2 > 1': with 'nest: true' every begin opens a level, or the end of "
        "a begin left out would close the span around it; filter the rows with 'where' instead");
  CHECK(check_error(python_span("  nest: true\n  report: open\n", "select: count()\n")) ==
        "5:3: 'report: open' walks a hash of open spans at each print, and 'nest: true' keeps "
        "them in each thread's own storage, which cannot be walked: use one of them");
}

TEST_CASE("depth exists in a nest: true span only, in select, where and group_by") {
  CHECK(check_error(python_span("  nest: true\n",
                                "where: depth < 3\nselect: [count(), hist(duration)]\n"
                                "group_by: depth\n")) == "");
  CHECK(check_error(python_span("", "select: [count()]\ngroup_by: depth\n")) ==
        "5:11: 'depth' (how many spans of the thread are open around this one) exists only in a "
        "span with 'nest: true'");
  // Elsewhere the name is free: a macro may take it.
  CHECK(check_error("macros:\n  depth: 'pid + 1'\nprobe: tracepoint:syscalls:sys_enter_read\n"
                    "select: count()\ngroup_by: depth\n") == "");
  // The did-you-mean offers it only where it exists.
  CHECK(check_error(python_span("  nest: true\n", "select: count()\ngroup_by: dpeth\n"))
            .ends_with("did you mean 'depth'?"));
}

TEST_CASE("report: flow needs nest, streams, and every item is valid at both probes") {
  CHECK(check_error(flow("[tid, depth, flow(str(arg1)) as method, str(arg0), arg2, duration]")) ==
        "");
  CHECK(check_error(python_span("  report: flow\n", "select: tid\n")) ==
        "4:3: 'report: flow' prints each begin and end at its call depth, which only a span with "
        "'nest: true' keeps: add 'nest: true'");
  CHECK(check_error(flow("count()")) ==
        "5:3: a span with 'report: flow' streams a row for every begin and every end: select "
        "plain values (tid, depth, flow(str(arg1))), not aggregates or group_by");
  // retval exists at the return probe only: a begin row cannot have it.
  std::string at_entry = check_error(
      std::string("span:\n  begin: uprobe:c:malloc\n  end: uretprobe:c:malloc\n  nest: true\n"
                  "  report: flow\nselect: [tid, retval]\n"));
  CHECK(
      at_entry.starts_with("6:15: with 'report: flow' a begin row evaluates it at the begin "
                           "probe: 'retval' exists only on return probes"));
  CHECK(at_entry.find("malloc' is an entry probe") != std::string::npos);
  // begin.EXPR and duration are absent at begin rows: fine in select, not in where.
  CHECK(check_error(flow("[tid, begin.arg2]")) == "");
  CHECK(check_error(flow("tid", "where: duration > 1000\n")) ==
        "7:8: 'duration' in where 'duration > 1000': with 'report: flow' the filter also decides "
        "begin rows, which have no duration and no begin values yet");
  CHECK(check_error(flow("tid", "where: depth < 4\n")) == "");
  // unmatched: keep adds the ends that found no begin.
  CHECK(check_error(python_span("  nest: true\n  report: flow\n  unmatched: keep\n",
                                "select: [tid, flow(str(arg1)), duration]\n")) == "");
}

TEST_CASE("flow() exists only in report: flow, around a string or an integer") {
  CHECK(check_error(python_span("  nest: true\n", "select: [tid, flow(str(arg1))]\n")) ==
        "5:15: flow() indents a value by its row's depth after '-> ' (a begin) or '<- ' (an end), "
        "so it exists only in a span with 'nest: true' and 'report: flow', whose rows are begins "
        "and ends");
  CHECK(check_error("probe: tracepoint:syscalls:sys_enter_read\nselect: flow(comm)\n")
            .starts_with("2:9: flow() indents a value"));
  CHECK(check_error(flow("[flow(arg2) as line]")) == "");
  CHECK(check_error(flow("[flwo(arg2)]")).ends_with("did you mean 'flow'?"));
}

TEST_CASE("nest and report: flow have no SQL form: convert says so") {
  auto nested = bpfql::load_query_text("q.yml", python_span("  nest: true\n", "select: count()\n"));
  REQUIRE(nested.has_value());
  auto sql = bpfql::print_sql(*nested);
  REQUIRE_FALSE(sql.has_value());
  CHECK(sql.error().loc.line == 4);
  CHECK(sql.error().message.starts_with("a span with 'nest: true' has no SQL form"));
  auto flowing = bpfql::load_query_text("q.yml", flow("tid"));
  REQUIRE(flowing.has_value());
  auto flow_sql = bpfql::print_sql(*flowing);
  REQUIRE_FALSE(flow_sql.has_value());
  CHECK(flow_sql.error().loc.line == 5);
  CHECK(flow_sql.error().message.starts_with("a span with 'report: flow' has no SQL form"));
  auto yaml = bpfql::print_yaml(*flowing);
  REQUIRE(yaml.has_value());
  CHECK(yaml->find("  report: flow\n  nest: true\n") != std::string::npos);
}

TEST_CASE("nest: a per-thread stack of begins in task storage; the plan marks flow rows") {
  bpfql::Plan plan = plan_of(flow("[tid, depth, flow(str(arg1)) as method, duration]"));
  const bpfql::PlanQuery& q = plan.queries[0];
  CHECK(q.open_span_map.empty());  // thread storage: nothing to walk or count at exit
  REQUIRE(q.flow_call_offset.has_value());
  REQUIRE(q.begun_offset.has_value());
  REQUIRE(q.event_fields.size() == 4);
  CHECK(q.event_fields[2].display == bpfql::Display::Flow);
  CHECK(q.event_fields[3].from_begin);  // duration: absent at begin rows
  CHECK_FALSE(q.event_fields[2].from_begin);
  const std::string& c = plan.c_source;
  CHECK(c.find("u64 s[64];") != std::string::npos);  // the begin times, 64 levels
  CHECK(c.find("BPF_TASK_STORAGE(q0_start, struct q0_nest);") != std::string::npos);
  CHECK(c.find("st->depth = depth + 1;") != std::string::npos);  // a begin pushes
  CHECK(c.find("st->depth = depth;") != std::string::npos);      // an end pops
  CHECK(c.find("sp = &st->s[depth & 63];") != std::string::npos);
  CHECK(c.find("ev.flow_call = 1;") != std::string::npos);  // the begin's row
  CHECK(c.find("ev.flow_call = 0;") != std::string::npos);  // the end's
}

TEST_CASE("nest: a thread's stack is one task-storage value, under 64 KiB") {
  // Six captured strings of 256 bytes, 64 levels: 98 KiB, refused before anything is loaded.
  std::string yaml =
      "span:\n  begin: uprobe:c:open\n  end: uretprobe:c:open\n  nest: true\n"
      "select: [begin.str(arg0), begin.str(arg1), begin.str(arg2), begin.str(arg3), "
      "begin.str(arg4), begin.str(arg5), duration]\nstrlen: 256\n";
  auto program = check_yaml(yaml);
  REQUIRE_MESSAGE(program, program.error().message);
  auto plan = bpfql::generate_plan(*program);
  REQUIRE_FALSE(plan.has_value());
  CHECK(
      plan.error().message.starts_with("the nested spans of query 'q' take 98824 bytes per "
                                       "thread (64 levels of 1544 bytes"));
}

TEST_CASE("nest ending at a return probe: a begin past 64 levels is not counted (no return comes)") {
  std::string c = plan_of(
                      "span:\n  begin: uprobe:c:malloc\n  end: uretprobe:c:malloc\n  nest: true\n"
                      "select: [count(), hist(duration)]\ngroup_by: depth\n")
                      .c_source;
  // The depth is raised only after the check, so a begin the kernel will not return from
  // leaves the stack as it was.
  size_t check = c.find("if (depth >= 64) {  /* past the kernel's pending returns");
  size_t raise = c.find("st->depth = depth + 1;");
  REQUIRE(check != std::string::npos);
  REQUIRE(raise != std::string::npos);
  CHECK(check < raise);
}
