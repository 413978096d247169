// entry.EXPR on the real kernel: values of a call's entry read back at its return, paired by the
// activation (thread and stack frame). bpfql_wl_recurse(depth, tag) returns depth + 1000 * tag,
// so every return event says itself whether it got its own call's arguments: in a recursion
// (every depth in flight at once) and in a signal handler that makes calls of the same function
// while one of its calls is interrupted at its innermost depth.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

using DepthTag = std::pair<int64_t, int64_t>;

struct Returns {
  std::map<DepthTag, int64_t> calls;  // (depth, tag) -> returns seen
  std::map<DepthTag, std::vector<int64_t>> ns;
};

Returns returns_of(const std::vector<json>& events) {
  Returns r;
  for (const json& ev : events) {
    int64_t depth = as_int(ev["depth"]), tag = as_int(ev["tag"]);
    CAPTURE(ev.dump());
    CHECK(as_int(ev["retval"]) == depth + 1000 * tag);  // its own call's arguments
    CHECK(as_int(ev["ns"]) > 0);
    ++r.calls[{depth, tag}];
    r.ns[{depth, tag}].push_back(as_int(ev["ns"]));
  }
  return r;
}

// Three recursions 6 deep (`recurse 5 3`) under `file`, whose hash has room for 2 entry
// records: its prints, with the dropped count they add up to.
std::vector<json> prints_with_no_room(const std::string& file, const std::string& query,
                                      int64_t& dropped) {
  TraceRun run = trace({.queries = {query_file(file)},
                        .workload = {"recurse", "5", "3"},
                        .params = {{"target", BPFQL_WORKLOAD}},
                        .pass_pid = false,
                        .pid_option = true});
  INFO("stderr:\n" << run.err << "stdout:\n" << run.out);
  REQUIRE(run.status.exited_with(0));
  std::vector<json> prints = intervals_of(run, query);
  REQUIRE(!prints.empty());
  dropped = 0;
  for (const json& p : prints) dropped += as_int(p["dropped"]);
  return prints;
}

}  // namespace

TEST_CASE("entry.arg0 at a uretprobe: each return of a recursion gets its own call's arguments") {
  BPFQL_REQUIRE_ROOT();
  // Three recursions 6 deep (depths 5..0 in flight at once, tag 1).
  TraceRun run = trace({.queries = {query_file("entry-recurse.yml")},
                        .workload = {"recurse", "5", "3"},
                        .params = {{"target", BPFQL_WORKLOAD}},
                        .pass_pid = false,
                        .pid_option = true});
  INFO("stderr:\n" << run.err << "stdout:\n" << run.out);
  REQUIRE(run.status.exited_with(0));
  Returns r = returns_of(events_of_pid(run, "entry-recurse"));
  std::map<DepthTag, int64_t> expected;
  for (int64_t d = 0; d <= 5; ++d) expected[{d, 1}] = 3;
  CHECK(r.calls == expected);
}

TEST_CASE("entry values in a signal handler that calls the function while it is mid-call") {
  BPFQL_REQUIRE_ROOT();
  // bpfql_wl_recurse(4, 1) raises SIGUSR1 at depth 0, with depths 4..0 of tag 1 in flight; the
  // handler runs there, on the same stack, and calls bpfql_wl_recurse(3, 2): depths 3..0 of tag
  // 2 begin and return before any of tag 1 returns. raise() delivers the signal before it
  // returns, so the interleaving is the same every run.
  TraceRun run = trace({.queries = {query_file("entry-recurse.yml")},
                        .workload = {"recurse-signal", "4", "3"},
                        .params = {{"target", BPFQL_WORKLOAD}},
                        .pass_pid = false,
                        .pid_option = true});
  INFO("stderr:\n" << run.err << "stdout:\n" << run.out);
  REQUIRE(run.status.exited_with(0));
  Returns r = returns_of(events_of_pid(run, "entry-recurse"));
  std::map<DepthTag, int64_t> expected;
  for (int64_t d = 0; d <= 4; ++d) expected[{d, 1}] = 1;
  for (int64_t d = 0; d <= 3; ++d) expected[{d, 2}] = 1;
  REQUIRE(r.calls == expected);
  // ts - entry.ts is each call's own time: a call lasts at least as long as every call made
  // inside it, and depth 0 of tag 1 contains the whole handler.
  for (int64_t d = 1; d <= 4; ++d) CHECK(r.ns[{d, 1}][0] >= r.ns[{d - 1, 1}][0]);
  for (int64_t d = 1; d <= 3; ++d) CHECK(r.ns[{d, 2}][0] >= r.ns[{d - 1, 2}][0]);
  CHECK(r.ns[{0, 1}][0] >= r.ns[{3, 2}][0]);
}

TEST_CASE(
    "entry values: a return whose entry record found no room is dropped, never given another's") {
  BPFQL_REQUIRE_ROOT();
  // Room for 2 records, recursions 6 deep: depths 5 and 4 are stored, 3..0 find the hash full.
  int64_t dropped = 0;
  std::vector<json> prints = prints_with_no_room("entry-dropped.yml", "entry-dropped", dropped);
  CHECK(dropped == 4 * 3);
  json rows = prints.back()["rows"];
  REQUIRE(rows.size() == 2);
  for (int64_t d : {4, 5}) {
    json row = row_where(rows, {{"depth", d}});
    CHECK(as_int(row["calls"]) == 3);
    CHECK(as_int(row["returned"]) == 3 * (d + 1000));
  }
}



TEST_CASE("mm/malloc-sizes: malloc's size read at its entry, counted at its return") {
  BPFQL_REQUIRE_ROOT();
  // 50 malloc(4321) and 20 malloc(1000), the workload's only mallocs once it is released.
  TraceRun run = trace({.queries = {library_query("mm/malloc-sizes")},
                        .workload = {"malloc", "50", "4321", "malloc-other", "20", "1000"},
                        .pass_pid = false,
                        .pid_option = true});
  INFO("stderr:\n" << run.err << "stdout:\n" << run.out);
  REQUIRE(run.status.exited_with(0));
  int64_t dropped = 0;
  for (const json& p : intervals_of(run, "malloc-sizes")) dropped += as_int(p["dropped"]);
  CHECK(dropped == 0);
  json row = row_where(final_rows(run, "malloc-sizes"), {{"comm", "bpfql-wl"}});
  CHECK(as_int(row["calls"]) == 70);
  CHECK(as_int(row["bytes"]) == 50 * 4321 + 20 * 1000);
  std::map<int64_t, int64_t> buckets;
  for (const json& b : row["size"])
    if (as_int(b["count"]) > 0) buckets[as_int(b["min"])] = as_int(b["count"]);
  CHECK(buckets == std::map<int64_t, int64_t>{{512, 20}, {4096, 50}});
  CHECK(as_int(row["slowest"]) > 0);
}



TEST_CASE("begin.entry.arg0: a span's begin at a return without its entry record stores nothing") {
  BPFQL_REQUIRE_ROOT();
  int64_t dropped = 0;
  std::vector<json> prints =
      prints_with_no_room("entry-span-begin.yml", "entry-span-begin", dropped);
  CHECK(dropped == 4 * 3);
  // Depths 5 and 4 of each recursion begin the same two spans (a later begin replaces one).
  json rows = prints.back()["rows"];
  REQUIRE(rows.size() == 2);
  for (int64_t d : {4, 5}) {
    json row = row_where(rows, {{"depth", d}});
    CHECK(as_int(row["returned"]) == d + 1000);
    CHECK(as_int(row["open"]) == 1);
  }
}

}  // namespace bpfql::test
