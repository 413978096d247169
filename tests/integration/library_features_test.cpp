// Library features on real events (issue 18): a macro from an include file and optional filters
// (a string parameter left empty, a parameter compared with "*") count exactly what they say.
#include <doctest/doctest.h>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

int64_t calls(const std::map<std::string, std::string>& params) {
  TraceRun run = trace({.queries = {query_file("macro-optional-filters.yml")},
                        .workload = {"getppid", "400"},
                        .params = params});
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  json rows = final_rows(run, "macro-optional-filters");
  if (rows.empty()) return 0;
  REQUIRE(rows.size() == 1);
  return as_int(rows[0]["calls"]);
}

TEST_CASE("a macro from an include file and optional filters count exactly") {
  BPFQL_REQUIRE_ROOT();
  CHECK(calls({}) == 400);                                        // both filters off
  CHECK(calls({{"prefix", "bpfql-"}}) == 400);                    // on, matching
  CHECK(calls({{"prefix", "nginx"}}) == 0);                       // on, not matching
  CHECK(calls({{"only", "bpfql-wl"}}) == 400);
  CHECK(calls({{"only", "sshd"}}) == 0);
}

}  // namespace
}  // namespace bpfql::test
