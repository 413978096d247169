// Fusion (compiler/codegen/fusion.h): queries on the same tracepoint become one program,
// each body in turn with its own filter and maps; and `probe` over a wildcard of tracepoints
// comes from the attach cookie, so every probe shares one function.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "compiler/codegen/codegen.h"
#include "support/check_helpers.h"

using namespace bpfql;

namespace {

Plan plan_for(const std::string& yaml) {
  auto program = testing::check_yaml(yaml, {}, {});
  REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
  auto plan = generate_plan(*program);
  REQUIRE_MESSAGE(plan.has_value(), (plan ? "" : plan.error().message));
  return *plan;
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

std::string query(const std::string& name, const std::string& probe, const std::string& rest) {
  return "  - name: " + name + "\n    probe: " + probe + "\n" + rest;
}

const std::string kEnter = "tracepoint:raw_syscalls:sys_enter";

}  // namespace

TEST_CASE("queries on one tracepoint: one program runs every body, each with its own filter") {
  Plan plan = plan_for("queries:\n" +
                       query("a", kEnter, "    where: pid == 7\n    select: count()\n") +
                       query("b", kEnter, "    select: count()\n    group_by: comm\n") +
                       query("c", kEnter, "    where: uid == 0\n    select: count()\n"));
  REQUIRE(plan.queries.size() == 3);
  std::set<std::string> functions;
  for (const auto& q : plan.queries) {
    REQUIRE(q.attaches.size() == 1);
    functions.insert(q.attaches[0].function);
    CHECK(q.attaches[0].raw_tracepoint_ok);  // none reads the record
  }
  REQUIRE(functions.size() == 1);
  const std::string name = *functions.begin();
  for (const std::string& c : {plan.c_source, plan.c_plain}) {
    CHECK(count_of(c, "(struct tp_raw_syscalls_sys_enter *args)") == 1);  // the fused one only
    CHECK((c.find("int " + name + "(struct tp_raw_syscalls_sys_enter *args)") != std::string::npos ||
           c.find("BPFQL_FUNCTION(" + name + ")(struct tp_raw_syscalls_sys_enter *args)") !=
               std::string::npos));
    // Each filter leaves its own body only.
    CHECK(count_of(c, "goto " + name + "_0_end;") >= 1);
    CHECK(count_of(c, "goto " + name + "_2_end;") >= 1);
    CHECK(count_of(c, "q0_drop") >= 1);
    CHECK(count_of(c, "q1_drop") >= 1);
  }
  // Drops and outputs stay per query.
  CHECK(plan.queries[0].dropped_map != plan.queries[1].dropped_map);
  CHECK(plan.queries[0].value_map != plan.queries[2].value_map);
}

TEST_CASE("a fused program is a raw tracepoint only if no body reads the record") {
  Plan plan = plan_for("queries:\n" + query("a", kEnter, "    select: count()\n") +
                       query("b", kEnter, "    where: args.id == 0\n    select: count()\n"));
  REQUIRE(plan.queries.size() == 2);
  CHECK(plan.queries[0].attaches[0].function == plan.queries[1].attaches[0].function);
  CHECK_FALSE(plan.queries[0].attaches[0].raw_tracepoint_ok);
  CHECK_FALSE(plan.queries[1].attaches[0].raw_tracepoint_ok);
}

TEST_CASE("a helper read by two bodies, one of them before any filter, is read once") {
  Plan read_first = plan_for(
      "queries:\n" + query("a", kEnter, "    select: count()\n    group_by: tid\n") +
      query("b", kEnter, "    where: pid == 7\n    select: count()\n"));
  CHECK(count_of(read_first.c_plain, "= bpf_get_current_pid_tgid();") == 1);
  // Both read it only after a filter: each keeps its own read (a read the other's filter would
  // have spared is not moved before it).
  Plan after_filters = plan_for(
      "queries:\n" +
      query("a", kEnter, "    where: uid == 7\n    select: count()\n    group_by: tid\n") +
      query("b", kEnter, "    where: [cpu == 0, pid == 7]\n    select: count()\n"));
  CHECK(count_of(after_filters.c_plain, "= bpf_get_current_pid_tgid();") == 2);
}

TEST_CASE("queries on different tracepoints keep their own programs") {
  Plan plan = plan_for("queries:\n" + query("a", kEnter, "    select: count()\n") +
                       query("b", "tracepoint:raw_syscalls:sys_exit", "    select: count()\n"));
  CHECK(plan.queries[0].attaches[0].function != plan.queries[1].attaches[0].function);
  CHECK(plan.c_plain.find("fused") == std::string::npos);
}

TEST_CASE("a wildcard's probe builtin comes from the attach cookie: one function for every probe") {
  Plan plan = plan_for(
      "name: w\nprobe: [tracepoint:sched:sched_switch, tracepoint:sched:sched_wakeup, "
      "tracepoint:sched:sched_process_fork]\nselect: count()\ngroup_by: probe\n");
  const auto& attaches = plan.queries.at(0).attaches;
  REQUIRE(attaches.size() == 3);
  for (size_t i = 0; i < attaches.size(); ++i) {
    CHECK(attaches[i].function == attaches[0].function);
    CHECK(attaches[i].attach_cookie);
    CHECK(attaches[i].probe_index == i);
    CHECK_FALSE(attaches[i].raw_tracepoint_ok);  // a raw tracepoint's cookie needs Linux 6.10
  }
  CHECK(count_of(plan.c_plain, "bpf_get_attach_cookie(args)") == 1);
  // A cookie is the probe's index in its own query: such a program is never fused.
  Plan two = plan_for("queries:\n" +
                      query("w", "[tracepoint:sched:sched_switch, tracepoint:sched:sched_wakeup]",
                            "    select: count()\n    group_by: probe\n") +
                      query("s", "tracepoint:sched:sched_wakeup", "    select: count()\n"));
  CHECK(two.queries[0].attaches[1].function != two.queries[1].attaches[0].function);
}

TEST_CASE("a span that ends and begins at one probe keeps its program: fused, its begin was lost") {
  // offcputime beside another query of sched_switch: the fused body held the span's end alone,
  // so no span ever began and offcputime printed nothing.
  Plan plan = plan_for(
      "queries:\n"
      "  - name: offcpu\n"
      "    span:\n"
      "      begin: tracepoint:sched:sched_switch\n"
      "      end: tracepoint:sched:sched_switch\n"
      "      key: {begin: args.prev_pid, end: args.next_pid}\n"
      "    select: sum(duration)\n" +
      query("switches", "tracepoint:sched:sched_switch", "    select: count()\n") +
      query("more", "tracepoint:sched:sched_switch", "    where: cpu == 0\n    select: count()\n"));
  REQUIRE(plan.queries.size() == 3);
  REQUIRE(plan.queries[0].attaches.size() == 1);
  CHECK(plan.queries[0].attaches[0].function == "q0_p0");  // the program that ends, then begins
  CHECK(plan.queries[1].attaches[0].function == plan.queries[2].attaches[0].function);
  CHECK(plan.queries[1].attaches[0].function != "q0_p0");
  for (const std::string& c : {plan.c_source, plan.c_plain}) {
    size_t end = c.find("q0_p0_end(args);");
    REQUIRE(end != std::string::npos);
    CHECK(c.find("q0_p0_begin(args);", end) != std::string::npos);
  }
}
