// The program cache end to end: the first run of a query compiles it with libbcc (in a child
// process) and stores it; the next run loads the stored program and does not run libbcc at all
// (bpfql -v says "program cache: hit ... (libbcc not run)", and the miss/compile line is absent),
// and both count exactly the same events. USDT too: libbcc's argument readers come from the
// cache. Each test uses its own cache directory (BPFQL_CACHE_DIR).
#include <stdlib.h>

#include <optional>
#include <string>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

// BPFQL_CACHE_DIR → a fresh directory while it lives (bpfql inherits the environment).
class CacheDirEnv {
 public:
  CacheDirEnv() {
    if (const char* old = ::getenv("BPFQL_CACHE_DIR")) old_ = old;
    ::setenv("BPFQL_CACHE_DIR", (dir_.path() + "/cache").c_str(), 1);
  }
  ~CacheDirEnv() {
    if (old_) ::setenv("BPFQL_CACHE_DIR", old_->c_str(), 1);
    else ::unsetenv("BPFQL_CACHE_DIR");
  }

 private:
  TempDir dir_;
  std::optional<std::string> old_;
};

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

void check_cold(const TraceRun& run) {
  INFO("cold stderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  CHECK(has(run.err, "program cache: miss"));
  CHECK(has(run.err, "program cache: stored"));
  CHECK(!has(run.err, "program cache: hit"));
}

void check_warm(const TraceRun& run) {
  INFO("warm stderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  CHECK(has(run.err, "program cache: hit"));
  CHECK(has(run.err, "(libbcc not run)"));
  CHECK(!has(run.err, "program cache: miss"));
  CHECK(!has(run.err, "program cache: stored"));
}

}  // namespace

// Grouped by pid rather than filtered by it: a -p pid=N parameter is part of the generated C,
// so each new workload pid would be a new program (a cache miss by design).
constexpr const char* kByPid = R"(queries:
  - name: getppid-by-pid
    probe: tracepoint:syscalls:sys_enter_getppid
    select: [pid, count() as calls]
    group_by: pid
  - name: reads-by-pid
    probe: tracepoint:syscalls:sys_exit_read
    select: [pid, hist(retval) as sizes]
    group_by: pid
)";

TEST_CASE("a warm-cache run loads the stored program, skips libbcc and counts the same") {
  BPFQL_REQUIRE_ROOT();
  CacheDirEnv cache;
  TempDir dir;
  TraceSpec spec{.queries = {dir.write("by-pid.yml", kByPid)},
                 .workload = {"getppid", "4321", "read-sizes", "300"},
                 .pass_pid = false,
                 .extra_args = {"-v"}};
  TraceRun cold = trace(spec);
  check_cold(cold);
  TraceRun warm = trace(spec);
  check_warm(warm);
  std::optional<json> cold_sizes;
  for (const TraceRun* run : {&cold, &warm}) {
    json mine = {{"pid", run->workload_pid}};
    CHECK(as_int(row_where(final_rows(*run, "getppid-by-pid"), mine)["calls"]) == 4321);
    json sizes = row_where(final_rows(*run, "reads-by-pid"), mine)["sizes"];
    INFO("sizes: " << sizes.dump());
    if (!cold_sizes) cold_sizes = sizes;
    CHECK(sizes == *cold_sizes);  // the same buckets and counts, cold and warm
  }

  spec.extra_args = {"-v", "--no-cache"};
  TraceRun uncached = trace(spec);
  INFO("--no-cache stderr:\n" << uncached.err);
  CHECK(uncached.status.exited_with(0));
  CHECK(!has(uncached.err, "program cache"));
  CHECK(as_int(row_where(final_rows(uncached, "getppid-by-pid"),
                         {{"pid", uncached.workload_pid}})["calls"]) == 4321);
}

TEST_CASE("USDT argument readers come from the cache: the same strings and sums warm") {
  BPFQL_REQUIRE_ROOT();
  CacheDirEnv cache;
  TraceSpec spec{.queries = {query_file("usdt-lib.yml")},
                 .params = {{"lib", BPFQL_USDT_LIB}},
                 .pass_pid = false,
                 .command = {BPFQL_UPROBE_TARGET, "21"},
                 .extra_args = {"-v"}};
  TraceRun cold = trace(spec);
  check_cold(cold);
  TraceRun warm = trace(spec);
  check_warm(warm);
  for (const TraceRun* run : {&cold, &warm}) {
    json rows = final_rows(*run, "usdt-lib");
    CHECK(rows.size() == 2);
    json even = row_where(rows, {{"label", "even"}});
    CHECK(as_int(even["pings"]) == 11);
    CHECK(as_int(even["i"]) == 110);
    json odd = row_where(rows, {{"label", "odd"}});
    CHECK(as_int(odd["pings"]) == 10);
    CHECK(as_int(odd["i"]) == 100);
  }
}

}  // namespace bpfql::test
