// Optional filters (docs/language.md, "Parameters as optional filters"): a string parameter
// left empty turns startswith()/contains() off, and a parameter compared with a literal is
// decided at check time; written with literals, the same tests stay errors.
#include <doctest/doctest.h>

#include "compiler/codegen/codegen.h"
#include "support/check_helpers.h"

namespace bpfql::testing {
namespace {

const std::string kOptional = R"(params:
  prefix: {type: string, default: "", doc: "name prefix; empty: all"}
  only: {type: string, default: "*", doc: "one process name, or * for all"}
probe: tracepoint:sched:sched_switch
where: [startswith(comm, $prefix), $only == "*" || comm == $only]
select: count()
)";

std::string generated_c(const std::map<std::string, std::string>& params) {
  auto program = check_yaml(kOptional, params);
  REQUIRE_MESSAGE(program, (program ? "" : program.error().message));
  auto plan = generate_plan(*program);
  REQUIRE(plan);
  return plan->c_source;
}

TEST_CASE("optional filters: parameters at their defaults check, and read no comm") {
  CHECK(check_error(kOptional) == "");
  // Both tests are decided: the program never reads the process name.
  CHECK(generated_c({}).find("bpf_get_current_comm") == std::string::npos);
}

TEST_CASE("optional filters: parameters set to values filter as written") {
  CHECK(check_error(kOptional, {{"prefix", "ng"}, {"only", "nginx"}}) == "");
  CHECK(generated_c({{"prefix", "ng"}, {"only", "nginx"}}).find("bpf_get_current_comm") !=
        std::string::npos);
}

TEST_CASE("optional filters: the same tests with literals are still errors") {
  std::string literal_empty = R"(probe: tracepoint:sched:sched_switch
where: startswith(comm, "")
select: count()
)";
  CHECK(check_error(literal_empty) == "2:25: startswith() with an empty string is always true");
  std::string two_literals = R"(probe: tracepoint:sched:sched_switch
where: '"a" == "b"'
select: count()
)";
  CHECK(check_error(two_literals).find("compares two constants") != std::string::npos);
}

}  // namespace
}  // namespace bpfql::testing
