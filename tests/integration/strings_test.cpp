// String filters on openat file names: ==, startswith, contains, a string parameter, and the
// file name as a group_by key. Each test opens two unique paths so a filter has to choose.
#include <doctest/doctest.h>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

struct TwoFiles {
  TempDir dir;
  std::string target = dir.file("bpfql-test-target");
  std::string other = dir.file("bpfql-test-target-other");
  std::vector<std::string> workload(int target_opens, int other_opens) const {
    return {"openat", std::to_string(target_opens), target, "openat", std::to_string(other_opens), other};
  }
};

TEST_CASE("str(args.filename) == $path selects one file, which is the group key") {
  BPFQL_REQUIRE_ROOT();
  TwoFiles files;
  TraceRun run = trace({.queries = {query_file("open-exact.yml")},
                        .workload = files.workload(30, 20),
                        .params = {{"path", files.target}}});
  json rows = final_rows(run, "open-exact");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["file"] == files.target);
  CHECK(as_int(rows[0]["opens"]) == 30);
}

TEST_CASE("startswith() keeps both files, counted apart") {
  BPFQL_REQUIRE_ROOT();
  TwoFiles files;
  TraceRun run = trace({.queries = {query_file("open-prefix.yml")},
                        .workload = files.workload(13, 17),
                        .params = {{"prefix", files.dir.path() + "/bpfql-test-"}}});
  json rows = final_rows(run, "open-prefix");
  REQUIRE(rows.size() == 2);
  CHECK(as_int(row_where(rows, {{"file", files.target}})["opens"]) == 13);
  CHECK(as_int(row_where(rows, {{"file", files.other}})["opens"]) == 17);
}

TEST_CASE("contains() on a const char * field, read without str()") {
  BPFQL_REQUIRE_ROOT();
  TwoFiles files;
  TraceRun run = trace({.queries = {query_file("open-contains.yml")}, .workload = files.workload(5, 9)});
  json rows = final_rows(run, "open-contains");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["args.filename"] == files.other);
  CHECK(as_int(rows[0]["opens"]) == 9);
}

TEST_CASE("-p overrides a string parameter's default") {
  BPFQL_REQUIRE_ROOT();
  TwoFiles files;
  TraceRun run = trace({.queries = {query_file("open-target.yml")},
                        .workload = files.workload(8, 3),
                        .params = {{"target", files.target}},
                        .pass_pid = false});
  json rows = final_rows(run, "open-target");
  // Only the workload opens this unique path.
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["comm"] == "bpfql-wl");
  CHECK(as_int(rows[0]["opens"]) == 8);
}

}  // namespace
}  // namespace bpfql::test
