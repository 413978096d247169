// -c in code generation: the tracked-pid map, the fork/exit functions that keep it, and a filter
// in every query function (uprobes and USDT included, which then attach for every process).
#include <doctest/doctest.h>

#include <algorithm>

#include "compiler/codegen/codegen.h"
#include "support/check_helpers.h"

using namespace bpfql;

namespace {

Plan plan_for(const std::string& yaml, const CheckOptions& options) {
  auto checked = testing::check_yaml(yaml, {}, options);
  INFO((checked ? "" : checked.error().message));
  REQUIRE(checked.has_value());
  auto plan = generate_plan(*checked);
  INFO((plan ? "" : plan.error().message));
  REQUIRE(plan.has_value());
  return std::move(*plan);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("-c: the process tree map, its trackers and the filter in both dialects") {
  CheckOptions tree;
  tree.pid = 4242;
  tree.pid_tree = true;
  Plan plan = plan_for(R"(queries:
  - name: a
    probe: tracepoint:syscalls:sys_enter_getppid
    select: count()
  - name: b
    probe: tracepoint:raw_syscalls:sys_enter
    select: count()
    group_by: comm
)", tree);
  for (const std::string* c : {&plan.c_source, &plan.c_plain}) {
    CAPTURE(*c);
    CHECK(count(*c, "bpfql_tree_fork") == 1);
    CHECK(count(*c, "bpfql_tree_exit") == 1);
    CHECK(c->find("args->child_pid") != std::string::npos);
    // Each query function: the command itself, or a tracked descendant.
    CHECK(count(*c, "if (tgid != BPFQL_CONST(") == 2);
  }
  REQUIRE(plan.constants.size() == 1);  // one slot: the filters' and the fork tracker's root
  CHECK(plan.constants[0].value == 4242);
  CHECK(plan.constants[0].source == "-c");
  REQUIRE(plan.queries.size() == 2);
  REQUIRE(plan.queries[0].attaches.size() == 3);  // its probe, then the fork and exit trackers
  CHECK(plan.queries[0].attaches[1].tracepoint == "sched:sched_process_fork");
  CHECK(plan.queries[0].attaches[2].tracepoint == "sched:sched_process_exit");
  CHECK(plan.queries[1].attaches.size() == 1);
  CHECK(std::ranges::count(plan.maps, std::string("bpfql_tree"), &PlanMap::name) == 1);

  // --pid alone: one process, no map.
  CheckOptions one;
  one.pid = 4242;
  Plan single = plan_for("probe: tracepoint:syscalls:sys_enter_getppid\nselect: count()\n", one);
  CHECK(single.c_source.find("bpfql_tree") == std::string::npos);
  CHECK(single.queries[0].attaches.size() == 1);
}
