// Span probes with their own key and condition (`{probe, key, where}` items of `begin`/`end`):
// how they load, print and check, their errors, and the C each probe gets (runqlat's begin at
// sched_switch keyed by the task switched out, beside the wakeups' shared key).
#include <doctest/doctest.h>

#include <string>

#include "compiler/codegen/codegen.h"
#include "compiler/diagnostics.h"
#include "compiler/syntax/print_query.h"
#include "compiler/syntax/query.h"
#include "support/check_helpers.h"

using bpfql::testing::check_error;
using bpfql::testing::check_yaml;

namespace {

const char* kRunqlat = R"(span:
  begin:
    - tracepoint:sched:sched_wakeup
    - tracepoint:sched:sched_wakeup_new
    - probe: tracepoint:sched:sched_switch
      key: args.prev_pid
      where: (args.prev_state & 0xff) == 0
  end: tracepoint:sched:sched_switch
  key: {begin: args.pid, end: args.next_pid}
  begin_where: args.pid != 0
select: hist(duration)
)";

std::string load_error(const std::string& yaml) {
  auto file = bpfql::load_query_text("q.yml", yaml);
  if (file) return "";
  const auto& d = file.error();
  return std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + ": " + d.message;
}

std::string c_of(const std::string& yaml) {
  auto program = check_yaml(yaml);
  REQUIRE_MESSAGE(program, program.error().message);
  auto plan = bpfql::generate_plan(*program);
  REQUIRE_MESSAGE(plan, plan.error().message);
  return plan->c_source;
}

// The text of one generated function, from its signature to its closing brace.
std::string function_text(const std::string& c, const std::string& signature) {
  size_t start = c.find(signature);
  INFO("looking for: " << signature << "\nin:\n" << c);
  REQUIRE(start != std::string::npos);
  return c.substr(start, c.find("\n}\n", start) - start);
}

}  // namespace

TEST_CASE("span rules: a begin item written as a map keeps its probe's place, key and where") {
  auto file = bpfql::load_query_text("q.yml", kRunqlat);
  REQUIRE_MESSAGE(file, file.error().message);
  const bpfql::SpanSpec& span = *file->queries[0].span;
  REQUIRE(span.begin.size() == 3);
  CHECK(span.begin[2].text == "tracepoint:sched:sched_switch");
  CHECK(span.begin[2].loc.line == 5);
  REQUIRE(span.begin_rules.size() == 1);
  const bpfql::SpanProbeRule& rule = span.begin_rules[0];
  CHECK(rule.index == 2);
  REQUIRE(rule.key.size() == 1);
  CHECK(rule.key[0].text == "args.prev_pid");
  CHECK(rule.key[0].loc.line == 6);
  CHECK(rule.key[0].loc.col == 12);
  CHECK(rule.has_where);
  REQUIRE(rule.where.size() == 1);
  CHECK(rule.where[0].text == "(args.prev_state & 0xff) == 0");
  CHECK(span.end_rules.empty());
  // A single map is a list of one; `where: []` is written (and clears begin_where there).
  auto one = bpfql::load_query_text(
      "q.yml", "span:\n  begin: {probe: 't:a:b', where: []}\n  end: t:a:c\nselect: count()\n");
  REQUIRE_MESSAGE(one, one.error().message);
  CHECK(one->queries[0].span->begin_rules.at(0).has_where);
  CHECK(one->queries[0].span->begin_rules.at(0).where.empty());
}

TEST_CASE("span rules: errors in an item point into it, with a did-you-mean") {
  CHECK(load_error("span:\n  begin:\n    - t:a:b\n    - {probe: t:a:c, kee: pid}\n  end: t:a:d\n"
                   "select: count()\n") ==
        "4:22: unknown key 'kee' in span begin probe; did you mean 'key'?");
  CHECK(load_error("span:\n  begin: t:a:b\n  end:\n    - {probe: t:a:c, wher: pid == 1}\n"
                   "select: count()\n") ==
        "4:22: unknown key 'wher' in span end probe; did you mean 'where'?");
  CHECK(load_error("span:\n  begin: [t:a:b, {key: pid}]\n  end: t:a:d\nselect: count()\n") ==
        "2:18: this span begin probe names no 'probe': {probe: SPEC, key: EXPR, where: COND}");
  CHECK(load_error("span:\n  begin: [t:a:b, {probe: t:a:c}]\n  end: t:a:d\nselect: count()\n") ==
        "2:18: this span begin probe has neither 'key' nor 'where': write the probe spec alone");
  CHECK(load_error("span:\n  begin: [{probe: 't:a:b, t:a:c', key: pid}]\n  end: t:a:d\n"
                   "select: count()\n")
            .starts_with("2:20: 'probe' names one probe here"));
  CHECK(load_error("span:\n  begin: [{probe: t:a:b, key: {begin: pid, end: pid}}]\n  end: t:a:d\n"
                   "select: count()\n")
            .starts_with("2:31: the key of one begin probe is this side's expression or list"));
}

TEST_CASE(
    "span rules: each probe is checked with its own key and where, the others with the shared") {
  auto program = check_yaml(kRunqlat);
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries[0];
  REQUIRE(q.span);
  const auto& span = *q.span;
  REQUIRE(span.begin.size() == 3);
  CHECK(span.begin_rule == std::vector<int>{-1, -1, 0});
  CHECK(span.end_rule == std::vector<int>{-1});
  CHECK(span.begin_key_at(0).at(0)->text == "args.pid");
  CHECK(span.begin_key_at(2).at(0)->text == "args.prev_pid");
  CHECK(span.begin_filters_at(0).at(0)->text == "args.pid != 0");
  REQUIRE(span.begin_filters_at(2).size() == 1);
  CHECK(span.begin_filters_at(2)[0]->text == "(args.prev_state & 0xff) == 0");
  CHECK(span.end_key_at(0).at(0)->text == "args.next_pid");
  CHECK(span.end_filters_at(0) == nullptr);
  // sched_switch has no args.pid: begin_where and the shared key were never typed there.
  CHECK(q.warnings.empty());
  // Typed at its own probe only: a field of sched_switch is unknown at the wakeups.
  CHECK(
      check_error("span:\n  begin: [tracepoint:sched:sched_wakeup, tracepoint:sched:sched_switch]\n"
                  "  end: tracepoint:sched:sched_switch\n"
                  "  key: {begin: args.prev_pid, end: args.next_pid}\nselect: count()\n") ==
      "4:16: unknown field 'prev_pid' in tracepoint sched:sched_wakeup");
}

TEST_CASE("span rules: keys that cannot meet are errors at the begin key") {
  // Lengths: a composite begin key against a single end key.
  CHECK(check_error("span:\n  begin:\n    - tracepoint:sched:sched_wakeup\n"
                    "    - {probe: tracepoint:sched:sched_switch, key: [args.prev_pid, cpu]}\n"
                    "  end: tracepoint:sched:sched_switch\n"
                    "  key: {begin: args.pid, end: args.next_pid}\nselect: count()\n") ==
        "4:51: this begin key has 2 expressions and the end key 1; a composite key pairs them one "
        "to one");
  // Types: `cpu` (u32) against pid_t (s32) would differ for the same high value.
  std::string types = check_error(
      "span:\n  begin:\n    - tracepoint:sched:sched_wakeup\n"
      "    - {probe: tracepoint:sched:sched_switch, key: cpu}\n"
      "  end: tracepoint:sched:sched_switch\n"
      "  key: {begin: args.pid, end: args.next_pid}\nselect: count()\n");
  CHECK(
      types.starts_with("4:51: the begin key 'cpu' (u32) and the end key 'args.next_pid' (s32) "
                        "cannot meet: keys are compared as 64-bit values"));
  // The same rule holds for the shared per-side key.
  CHECK(check_error("span:\n  begin: tracepoint:sched:sched_wakeup\n"
                    "  end: tracepoint:sched:sched_switch\n"
                    "  key: {begin: cpu, end: args.next_pid}\nselect: count()\n")
            .starts_with("4:16: the begin key 'cpu' (u32) and the end key"));
  // 64-bit keys of either signedness meet (memleak: retval against arg0).
  CHECK(check_error("span:\n  begin: tracepoint:syscalls:sys_exit_read\n"
                    "  end: tracepoint:syscalls:sys_enter_read\n"
                    "  key: {begin: retval, end: args.count}\nselect: count()\n") == "");
}

TEST_CASE(
    "span rules: an end item adds its where at its probe; begin_where used nowhere is an error") {
  auto program = check_yaml(R"(span:
  begin: tracepoint:syscalls:sys_enter_read
  end:
    - {probe: tracepoint:syscalls:sys_exit_read, where: retval > 0}
    - tracepoint:syscalls:sys_exit_write
select: count()
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& span = *program->queries[0].span;
  REQUIRE(span.end_filters_at(0) != nullptr);
  CHECK(span.end_filters_at(0)->at(0)->text == "retval > 0");
  CHECK(span.end_filters_at(1) == nullptr);
  CHECK(check_error(
            "span:\n  begin: {probe: tracepoint:sched:sched_switch, where: args.prev_pid != 0}\n"
            "  end: tracepoint:sched:sched_switch\n  begin_where: args.prev_pid > 1\n"
            "select: count()\n") ==
        "4:16: begin_where applies to no probe: every begin probe has its own 'where'");
}

TEST_CASE("span rules: the C of each probe reads its own key and tests its own where") {
  std::string c = c_of(kRunqlat);
  // The wakeups' program: the shared key and begin_where.
  std::string wakeup = function_text(c, "int q0_b0(");
  CHECK(wakeup.find("args->pid") != std::string::npos);
  CHECK(wakeup.find("prev_state") == std::string::npos);
  // sched_switch ends (next_pid) and then begins (prev_pid, if still runnable): no args.pid.
  std::string end = function_text(c, "q0_p0_end(");
  CHECK(end.find("args->next_pid") != std::string::npos);
  CHECK(end.find("prev_") == std::string::npos);
  std::string begin = function_text(c, "q0_p0_begin(");
  CHECK(begin.find("args->prev_pid") != std::string::npos);
  CHECK(begin.find("args->prev_state") != std::string::npos);
  CHECK(begin.find("args->pid") == std::string::npos);
  size_t main = c.find("int q0_p0(struct tp_sched_sched_switch *args) {");
  REQUIRE(main != std::string::npos);
  CHECK(c.find("q0_p0_end(args);", main) < c.find("q0_p0_begin(args);", main));
  // An end item's where is tested at its probe only.
  std::string ends = c_of(R"(span:
  begin: tracepoint:syscalls:sys_enter_read
  end:
    - {probe: tracepoint:syscalls:sys_exit_read, where: retval > 7}
    - tracepoint:syscalls:sys_exit_write
  key: pid
select: count()
)");
  CHECK(function_text(ends, "int q0_p0(").find("> 7") != std::string::npos);
  CHECK(function_text(ends, "int q0_p1(").find("> 7") == std::string::npos);
}

TEST_CASE("span rules: YAML prints them back as written; SQL has no form for them") {
  auto file = bpfql::load_query_text("q.yml", std::string("name: runqlat\n") + kRunqlat);
  REQUIRE_MESSAGE(file, file.error().message);
  auto yaml = bpfql::print_yaml(*file);
  REQUIRE_MESSAGE(yaml, yaml.error().message);
  auto again = bpfql::load_query_text("q.yml", *yaml);
  INFO(*yaml);
  REQUIRE_MESSAGE(again, again.error().message);
  const auto& rules = again->queries[0].span->begin_rules;
  REQUIRE(rules.size() == 1);
  CHECK(rules[0].index == 2);
  CHECK(rules[0].key.at(0).text == "args.prev_pid");
  CHECK(rules[0].where.at(0).text == "(args.prev_state & 0xff) == 0");
  auto sql = bpfql::print_sql(*file);
  REQUIRE(!sql);
  CHECK(sql.error().message.starts_with("a span probe with its own key or where"));
  CHECK(sql.error().loc.line == 6);
}
