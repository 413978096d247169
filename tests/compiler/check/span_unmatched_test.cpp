// `unmatched: keep`: a span's end whose key has no open span is recorded too. How it loads and
// prints, what the checker refuses (anything that would decide with the missing `duration` or
// `begin.` values), --pid where the end cannot filter, the C each kind of span end gets, and
// the Plan's description of the absent values.
#include <doctest/doctest.h>

#include <string>

#include "compiler/codegen/codegen.h"
#include "compiler/syntax/print_query.h"
#include "compiler/syntax/query.h"
#include "compiler/syntax/sql.h"
#include "support/check_helpers.h"

using bpfql::testing::check_error;
using bpfql::testing::check_yaml;

namespace {

// A read's end kept whether or not its begin (a read of more than 4096 bytes) was stored.
std::string reads(const std::string& key, const std::string& rest) {
  return "span:\n  begin: tracepoint:syscalls:sys_enter_read\n  end: "
         "tracepoint:syscalls:sys_exit_read\n"
         "  key: " +
         key + "\n  begin_where: args.count > 4096\n  unmatched: keep\n" + rest;
}

std::string load_error(const std::string& yaml) {
  auto file = bpfql::load_query_text("q.yml", yaml);
  if (file) return "";
  const auto& d = file.error();
  return std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + ": " + d.message;
}

bpfql::Plan plan_of(const std::string& yaml, const bpfql::CheckOptions& options = {}) {
  auto program = check_yaml(yaml, {}, options);
  REQUIRE_MESSAGE(program, program.error().message);
  auto plan = bpfql::generate_plan(*program);
  REQUIRE_MESSAGE(plan, plan.error().message);
  return std::move(*plan);
}

// The text of the function with this signature, up to its closing brace.
std::string function_text(const std::string& c, const std::string& signature) {
  size_t start = c.find(signature);
  INFO("looking for: " << signature << "\nin:\n" << c);
  REQUIRE(start != std::string::npos);
  return c.substr(start, c.find("\n}\n", start) - start);
}

size_t at(const std::string& text, const std::string& what, size_t from = 0) {
  size_t pos = text.find(what, from);
  INFO("looking for: " << what << "\nin:\n" << text);
  REQUIRE(pos != std::string::npos);
  return pos;
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("unmatched: keep and drop load; anything else is an error with a did-you-mean") {
  auto file = bpfql::load_query_text("q.yml", reads("pid", "select: [retval, duration]\n"));
  REQUIRE_MESSAGE(file, file.error().message);
  const bpfql::SpanSpec& span = *file->queries[0].span;
  CHECK(span.keep_unmatched);
  REQUIRE(span.unmatched_loc);
  CHECK(span.unmatched_loc->line == 6);
  CHECK(span.unmatched_loc->col == 14);
  auto dropped = bpfql::load_query_text(
      "q.yml", "span: {begin: 't:a:b', end: 't:a:c', unmatched: drop}\nselect: count()\n");
  REQUIRE_MESSAGE(dropped, dropped.error().message);
  CHECK_FALSE(dropped->queries[0].span->keep_unmatched);
  CHECK(load_error("span: {begin: 't:a:b', end: 't:a:c', unmatched: kep}\nselect: count()\n") ==
        "1:49: 'unmatched' is keep (an end whose key has no begin is recorded, without duration "
        "or begin values) or drop (the default: it is ignored), not 'kep'; did you mean 'keep'?");
  CHECK(load_error("span: {begin: 't:a:b', end: 't:a:c', unmatchd: keep}\nselect: count()\n")
            .find("did you mean 'unmatched'?") != std::string::npos);
}

TEST_CASE("unmatched: keep refuses what would decide with a missing duration or begin value") {
  // where, at the value itself
  std::string where = check_error(reads("pid", "where: duration > 1000\nselect: retval\n"));
  CHECK(where.rfind("7:8: 'duration' in where 'duration > 1000': an end kept by `unmatched: keep` "
                    "may have no begin, and then has no duration and no begin values; this "
                    "condition could not be decided for it",
                    0) == 0);
  CHECK(check_error(reads("pid", "where: [retval > 0, begin.comm == \"cat\"]\nselect: retval\n"))
            .rfind("7:21: 'begin.comm' in where", 0) == 0);
  // an end item's own where
  CHECK(check_error("span:\n  begin: tracepoint:syscalls:sys_enter_read\n  end:\n"
                    "    - {probe: tracepoint:syscalls:sys_exit_read, where: duration > 5}\n"
                    "  unmatched: keep\nselect: retval\n")
            .rfind("4:57: 'duration' in where 'duration > 5'", 0) == 0);
  // aggregates over begin values, whatever the kind
  for (const char* agg : {"sum(duration)", "hist(duration)", "max(begin.args.count)",
                          "percentile(duration / 1000, 50)"}) {
    std::string err = check_error(reads("pid", std::string("select: [count(), ") + agg + "]\n"));
    INFO(agg << " -> " << err);
    CHECK(err.find("in the aggregate '" + std::string(agg) + "'") != std::string::npos);
    CHECK(err.find("fewer events than count() counts") != std::string::npos);
  }
  // a group_by key (also a plain select item next to aggregates, which is one)
  CHECK(check_error(reads("pid", "select: count()\ngroup_by: begin.comm\n"))
            .rfind("8:11: 'begin.comm' in the group_by key 'begin.comm'", 0) == 0);
  // The error carries a note at `unmatched: keep`.
  auto file = bpfql::load_query_text("q.yml", reads("pid", "select: sum(duration)\n"));
  REQUIRE(file);
  auto checked = bpfql::check_file(*file, bpfql::testing::fixture_catalog(), {});
  REQUIRE_FALSE(checked);
  REQUIRE(checked.error().notes.size() == 1);
  CHECK(checked.error().notes[0].loc.line == 6);
  CHECK(checked.error().notes[0].message == "unmatched: keep (RIGHT JOIN in SQL) is set here");
  // What stays honest checks: a stream of begin values, aggregates of the end's own.
  CHECK(check_error(reads("pid",
                          "where: retval >= 0\nselect: [comm, retval, duration, "
                          "begin.args.count as asked, duration / 1000 as us]\n")) == "");
  CHECK(check_error(
            reads("pid", "select: [count(), sum(retval), hist(retval)]\ngroup_by: comm\n")) == "");
  // Without keep, none of this is refused.
  CHECK(check_error("span:\n  begin: tracepoint:syscalls:sys_enter_read\n  end: "
                    "tracepoint:syscalls:sys_exit_read\nwhere: duration > 1000\nselect: "
                    "sum(duration)\ngroup_by: begin.comm\n") == "");
}

TEST_CASE("unmatched: keep under --pid holds only where the end filters on the process") {
  bpfql::CheckOptions pid;
  pid.pid = 4242;
  // A system call's end runs in its task: kept ends are that process's.
  auto syscall = check_yaml(reads("tid", "select: [retval, duration]\n"), {}, pid);
  REQUIRE_MESSAGE(syscall, syscall.error().message);
  CHECK(syscall->queries[0].span->keep_unmatched);
  // A socket's state change runs in softirq: only its begin filters, and an end without one
  // cannot say whose it is, so none is kept (and check -v says so).
  const std::string sockets =
      "span:\n  begin: tracepoint:sock:inet_sock_set_state\n  end: "
      "tracepoint:sock:inet_sock_set_state\n"
      "  key: args.skaddr\n  unmatched: keep\nselect: [args.oldstate, args.newstate, duration]\n";
  auto socket = check_yaml(sockets, {}, pid);
  REQUIRE_MESSAGE(socket, socket.error().message);
  const bpfql::CheckedQuery& q = socket->queries[0];
  CHECK_FALSE(q.pid_at_end);
  CHECK_FALSE(q.span->keep_unmatched);
  REQUIRE(q.notes.size() == 1);
  CHECK(q.notes[0].loc.line == 5);
  CHECK(q.notes[0].message.find("records no end without a begin in this run") != std::string::npos);
  auto all = check_yaml(sockets);
  REQUIRE(all);
  CHECK(all->queries[0].span->keep_unmatched);
  CHECK(all->queries[0].notes.empty());
}

TEST_CASE(
    "unmatched: keep in a stream: the end's values, then the begin's only when it was found") {
  bpfql::Plan plan =
      plan_of(reads("pid", "select: [comm, retval, duration, begin.args.count as asked]\n"));
  std::string end = function_text(plan.c_source, "int q0_p0(");
  size_t lookup = at(end, "q0_start.lookup(&skey)");
  size_t own = at(end, "ev.retval = ");
  size_t missing =
      at(end, "if (!sp) {  /* no begin: recorded without its values (unmatched: keep) */");
  size_t unset = at(end, "ev.begun = 0;", missing);
  size_t early = at(end, "return 0;", missing);
  size_t duration = at(end, "u64 duration = ts - sp->ts;");
  size_t asked = at(end, "ev.asked = sp->");
  size_t set = at(end, "ev.begun = 1;");
  size_t consume = at(end, "q0_start.delete(&skey);");
  CHECK(lookup < own);
  CHECK(own < missing);
  CHECK(unset < early);
  CHECK(early < duration);
  CHECK(duration < asked);
  CHECK(asked < set);
  CHECK(set < consume);
  CHECK(occurrences(end, "perf_submit") == 2);         // one per branch
  CHECK(end.find("if (!sp)\n") == std::string::npos);  // no early return after the lookup
  // The Plan: which fields come from the begin, and the flag that says whether there was one.
  const bpfql::PlanQuery& q = plan.queries[0];
  REQUIRE(q.event_fields.size() == 4);
  CHECK_FALSE(q.event_fields[0].from_begin);  // comm
  CHECK_FALSE(q.event_fields[1].from_begin);  // retval
  CHECK(q.event_fields[2].from_begin);        // duration
  CHECK(q.event_fields[3].from_begin);        // begin.args.count
  REQUIRE(q.begun_offset);
  CHECK(*q.begun_offset + 1 <= q.event_size);
  CHECK(plan.c_source.find("u8 begun;") != std::string::npos);
  // Without keep, there is no flag and an end without a begin returns at once.
  bpfql::Plan dropping = plan_of(
      "span:\n  begin: tracepoint:syscalls:sys_enter_read\n  end: "
      "tracepoint:syscalls:sys_exit_read\n"
      "  key: pid\nselect: [retval, duration]\n");
  CHECK_FALSE(dropping.queries[0].begun_offset);
  CHECK_FALSE(dropping.queries[0].event_fields[1].from_begin);
  CHECK(dropping.c_source.find("begun") == std::string::npos);
  CHECK(function_text(dropping.c_source, "int q0_p0(").find("if (!sp)\n    return 0;") !=
        std::string::npos);
}

TEST_CASE("unmatched: keep in thread storage: an ended slot (time 0) is no begin either") {
  bpfql::Plan plan = plan_of(reads("tid", "select: [retval, duration]\n"));
  std::string end = function_text(plan.c_source, "int q0_p0(");
  size_t missing = at(end, "if (!sp || *sp == 0) {");
  size_t consume = at(end, "*sp = 0;", missing);
  CHECK(at(end, "u64 duration = ts - *sp;") < consume);
}

TEST_CASE("unmatched: keep in an aggregate: every end counts, and only a found span is consumed") {
  bpfql::Plan plan = plan_of(reads("pid", "select: count()\ngroup_by: retval\n"));
  std::string end = function_text(plan.c_source, "int q0_p0(");
  size_t lookup = at(end, "q0_start.lookup(&skey)");
  size_t count = at(end, "v->n++;");
  size_t done = at(end, "q0_done:");
  size_t consume = at(end, "if (sp)  /* the span is over */\n    q0_start.delete(&skey);");
  CHECK(lookup < count);
  CHECK(count < done);
  CHECK(done < consume);
  CHECK(end.find("return 0;", lookup) > consume);  // nothing leaves between lookup and consume
  CHECK(end.find("duration") == std::string::npos);
  CHECK_FALSE(plan.queries[0].begun_offset);  // no event
}

TEST_CASE("unmatched: keep on a probe that both ends and begins: the begin part still runs") {
  bpfql::Plan plan = plan_of(
      "span:\n  begin: tracepoint:sock:inet_sock_set_state\n  end: "
      "tracepoint:sock:inet_sock_set_state\n"
      "  key: args.skaddr\n  begin_where: args.newstate != 7\n  unmatched: keep\n"
      "select: [args.newstate, duration]\n");
  std::string end = function_text(plan.c_source, "q0_p0_end(");
  at(end, "if (!sp) {");
  std::string main = function_text(plan.c_source, "int q0_p0(");
  CHECK(at(main, "q0_p0_end(args);") < at(main, "q0_p0_begin(args);"));
}

TEST_CASE("unmatched: keep converts to RIGHT JOIN and back") {
  auto file = bpfql::load_query_text("q.yml", reads("pid", "select: [retval, duration]\n"));
  REQUIRE_MESSAGE(file, file.error().message);
  auto sql = bpfql::print_sql(*file);
  REQUIRE_MESSAGE(sql, sql.error().message);
  CHECK(sql->find("FROM tracepoint:syscalls:sys_enter_read AS b RIGHT JOIN "
                  "tracepoint:syscalls:sys_exit_read AS e ON b.pid = e.pid") != std::string::npos);
  auto back = bpfql::load_sql_text("-e", *sql, {});
  REQUIRE_MESSAGE(back, back.error().message);
  CHECK(back->queries[0].span->keep_unmatched);
  auto yaml = bpfql::print_yaml(*file);
  REQUIRE_MESSAGE(yaml, yaml.error().message);
  CHECK(yaml->find("  unmatched: keep\n") != std::string::npos);
  auto again = bpfql::load_query_text("q.yml", *yaml);
  REQUIRE_MESSAGE(again, again.error().message);
  CHECK(again->queries[0].span->keep_unmatched);
}

TEST_CASE("unmatched: keep and report: open together are an error at unmatched") {
  // report: open lists open spans; a kept end is no open span.
  std::string err = check_error(
      "span:\n  begin: tracepoint:syscalls:sys_enter_read\n  end: tracepoint:syscalls:sys_exit_read\n"
      "  key: pid\n  unmatched: keep\n  report: open\nselect: [begin.comm, count()]\n"
      "group_by: begin.comm\n");
  CHECK(err.rfind("5:14: 'unmatched: keep' records ends, and 'report: open' lists the spans still "
                  "open, not ends: use one of them",
                  0) == 0);
}
