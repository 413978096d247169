// Span queries on the real kernel: begin and end correlated by key in a kernel map, `duration`
// (ns) at the end, begin_where and where, and percentiles checked against the exact durations.
// (Begins whose end never comes are bounded by max_entries: capacity_test.cpp.)
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

// The bucket of hist() holding `ns`: [2^k, 2^(k+1)).
std::pair<int64_t, int64_t> power_of_two_bucket(int64_t ns) {
  int k = 63 - __builtin_clzll(static_cast<uint64_t>(ns));
  return {int64_t{1} << k, int64_t{1} << (k + 1)};
}

// The p-th percentile as percentile() defines it: the value of rank ceil(p/100 * n), from 1.
int64_t exact_percentile(std::vector<int64_t> sorted, double p) {
  std::sort(sorted.begin(), sorted.end());
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

TEST_CASE("a span over clock_nanosleep: each duration in its hist bucket, percentiles within 1/16") {
  BPFQL_REQUIRE_ROOT();
  const std::vector<int64_t> requested_ms = {10, 10, 10, 20, 20, 40};
  std::vector<std::string> steps = {"sleep"};
  for (int64_t ms : requested_ms) steps.push_back(std::to_string(ms));
  TraceRun run = trace({.queries = {query_file("span-sleep.yml")}, .workload = steps});
  CHECK(run.status.exited_with(0));

  // The exact durations, one event per sleep, in order.
  std::vector<json> events = events_of(run, "span-sleep-each");
  REQUIRE(events.size() == requested_ms.size());
  std::vector<int64_t> durations;
  for (size_t i = 0; i < events.size(); ++i) {
    int64_t ns = as_int(events[i]["duration"]);
    INFO("sleep " << i << " of " << requested_ms[i] << " ms took " << ns << " ns");
    CHECK(ns >= requested_ms[i] * 1'000'000);        // never shorter than asked
    CHECK(ns < requested_ms[i] * 1'000'000 * 3 / 2);  // and not much longer
    durations.push_back(ns);
  }

  json rows = final_rows(run, "span-sleep");
  REQUIRE(rows.size() == 1);
  const json& row = rows[0];
  CHECK(as_int(row["sleeps"]) == 6);
  // The two queries time each sleep with programs of their own, run one after the other on the
  // same tracepoints: their clocks are read microseconds apart.
  constexpr int64_t kSkewNs = 100'000;
  CHECK(std::abs(as_int(row["shortest"]) - *std::min_element(durations.begin(), durations.end())) < kSkewNs);
  CHECK(std::abs(as_int(row["longest"]) - *std::max_element(durations.begin(), durations.end())) < kSkewNs);

  // hist(): every duration counted in its own power-of-two bucket (10 ms in [8.4 ms, 16.8 ms),
  // 20 ms in [16.8 ms, 33.6 ms), 40 ms in [33.6 ms, 67.1 ms)), and nothing else.
  INFO("hist: " << row["ns"].dump());
  int64_t total = 0;
  for (const json& bucket : row["ns"]) {
    int64_t expected = 0;
    for (int64_t ns : durations)
      if (power_of_two_bucket(ns) == std::pair{as_int(bucket["min"]), as_int(bucket["max"])})
        ++expected;
    CHECK(as_int(bucket["count"]) == expected);
    total += as_int(bucket["count"]);
  }
  CHECK(total == 6);
  CHECK(power_of_two_bucket(durations[0]) == std::pair<int64_t, int64_t>{1 << 23, 1 << 24});
  CHECK(power_of_two_bucket(durations[5]) == std::pair<int64_t, int64_t>{1 << 25, 1 << 26});

  // percentile(): within the stated relative error of the exact percentile of these durations.
  INFO("percentiles: " << row["p"].dump());
  for (auto [name, p] : {std::pair{"p50", 50.0}, std::pair{"p90", 90.0}, std::pair{"p99", 99.0}}) {
    double exact = static_cast<double>(exact_percentile(durations, p));
    double reported = as_double(row["p"][name]);
    INFO(name << ": exact " << exact << ", reported " << reported);
    CHECK(std::abs(reported - exact) <= exact / 16);
  }
}

TEST_CASE("percentile() of a known distribution: reads of 1..1000 bytes") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("sizes.yml",
                            "name: sizes\nparams:\n  pid: {type: int}\n"
                            "probe: tracepoint:syscalls:sys_exit_read\nwhere: pid == $pid\n"
                            "select: [count() as reads, percentile(retval, 1, 25, 50, 90, 99, 100) as size]\n");
  TraceRun run = trace({.queries = {q}, .workload = {"read-sizes", "1000"}});
  json rows = final_rows(run, "sizes");
  REQUIRE(rows.size() == 1);
  CHECK(as_int(rows[0]["reads"]) == 1000);
  INFO("size: " << rows[0]["size"].dump());
  // Values below 16 have buckets of their own: exact.
  CHECK(as_double(rows[0]["size"]["p1"]) == 10.0);
  for (auto [name, exact] : {std::pair{"p25", 250.0}, std::pair{"p50", 500.0},
                             std::pair{"p90", 900.0}, std::pair{"p99", 990.0},
                             std::pair{"p100", 1000.0}}) {
    double reported = as_double(rows[0]["size"][name]);
    INFO(name << ": exact " << exact << ", reported " << reported);
    CHECK(std::abs(reported - exact) <= exact / 16);
  }
}

TEST_CASE("the table states percentile()'s relative error") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string q = dir.write("sizes.yml",
                            "name: sizes\nparams:\n  pid: {type: int}\n"
                            "probe: tracepoint:syscalls:sys_exit_read\nwhere: pid == $pid\n"
                            "select: percentile(retval, 50) as size\n");
  TraceRun run = trace({.queries = {q}, .workload = {"read", "10", "4096"}, .format = "table"});
  INFO("stdout:\n" << run.out);
  CHECK(run.out.find("p50=") != std::string::npos);
  CHECK(run.out.find("(±6.25%)") != std::string::npos);
}

TEST_CASE("begin_where filters at the begin probe, where at the end probe; a key other than tid") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("span-read-filters.yml")},
                        .workload = {"read", "5", "100", "read", "7", "1500"}});
  CHECK(run.status.exited_with(0));
  json begun = final_rows(run, "begun-1500");
  REQUIRE(begun.size() == 1);
  CHECK(as_int(begun[0]["reads"]) == 7);
  CHECK(as_int(begun[0]["size"]) == 1500);
  CHECK(as_int(final_rows(run, "ended-100")[0]["reads"]) == 5);
  json keyed = final_rows(run, "keyed-by-pid");
  CHECK(as_int(keyed[0]["reads"]) == 12);
  CHECK(as_int(keyed[0]["bytes"]) == 5 * 100 + 7 * 1500);
}

TEST_CASE("a span from a uprobe to its uretprobe") {
  BPFQL_REQUIRE_ROOT();
  constexpr int64_t n = 64;
  TraceRun run = trace({.queries = {query_file("span-uprobe.yml")},
                        .params = {{"target", BPFQL_UPROBE_TARGET}},
                        .pass_pid = false,
                        .command = {BPFQL_UPROBE_TARGET, std::to_string(n)}});
  json rows = final_rows(run, "span-uprobe");
  REQUIRE(rows.size() == 1);
  CHECK(as_int(rows[0]["calls"]) == n);
  CHECK(as_int(rows[0]["total"]) == 1000 * n + n * (n - 1));
  CHECK(as_int(rows[0]["longest"]) > 0);
  CHECK(as_int(rows[0]["longest"]) < 100'000'000);  // a function that adds: well under 0.1 s
}

}  // namespace
}  // namespace bpfql::test
