// The program cache end to end: the first run of a query compiles it (in a helper
// process) and stores it; the next run loads the stored program and does not run libbcc at all
// (bpfql -v says "program cache: hit ... (no compiler run)", and the miss/compile line is absent),
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
  CHECK(has(run.err, "(no compiler run)"));
  CHECK(!has(run.err, "program cache: miss"));
  CHECK(!has(run.err, "program cache: stored"));
}

}  // namespace

// Grouped by pid: the workload's row, cold and warm.
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

// -p pid=N and --pid N are run-time constants (plan.h): a new workload's pid is the same program.
constexpr const char* kFilteredByPid = R"(params:
  pid: {type: int}
  min: {type: int, default: 0}
probe: tracepoint:syscalls:sys_exit_read
where: [pid == $pid, args.ret > $min]
select: [count() as reads, sum(args.ret) as bytes]
)";

TEST_CASE("another -p / --pid value is the same program: a warm start that counts the new pid") {
  BPFQL_REQUIRE_ROOT();
  CacheDirEnv cache;
  TempDir dir;
  TraceSpec spec{.queries = {dir.write("filtered.yml", kFilteredByPid)},
                 .workload = {"read", "777", "64"},
                 .pid_option = true,
                 .extra_args = {"-v"}};
  TraceRun cold = trace(spec);
  check_cold(cold);
  spec.workload = {"read", "555", "32"};
  spec.params = {{"min", "31"}};
  TraceRun warm = trace(spec);
  check_warm(warm);
  CHECK(cold.workload_pid != warm.workload_pid);
  json c = final_rows(cold, "filtered").at(0);
  CHECK(as_int(c["reads"]) == 777);
  CHECK(as_int(c["bytes"]) == 777 * 64);
  json w = final_rows(warm, "filtered").at(0);
  CHECK(as_int(w["reads"]) == 555);
  CHECK(as_int(w["bytes"]) == 555 * 32);

  spec.params = {{"min", "32"}};  // no read returns more than 32: the filter takes the new value
  TraceRun none = trace(spec);
  check_warm(none);
  CHECK(as_int(final_rows(none, "filtered").at(0)["reads"]) == 0);
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
