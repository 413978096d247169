// How a run ends: stop_after (from the query or --stop-after), SIGINT and SIGTERM. Every way
// prints the final result, exits 0, and leaves no bpfql program loaded in the kernel.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <string_view>
#include <thread>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"
#include "tests/integration/kernel_state.h"

namespace bpfql::test {
namespace {

using Clock = std::chrono::steady_clock;

TEST_CASE("stop_after: bpfql exits by itself with the final print") {
  BPFQL_REQUIRE_ROOT();
  Clock::time_point attached;
  TraceRun run = trace({.queries = {query_file("stop-after.yml")},
                        .workload = {"getppid", "2500"},
                        .stop = Stop::OnItsOwn,
                        .while_tracing = [&](const Process&) { attached = Clock::now(); }});
  auto ran = std::chrono::duration_cast<milliseconds>(Clock::now() - attached);
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  CHECK_MESSAGE(ran >= milliseconds(2000), "stop_after: 3s, yet bpfql stopped after " << ran.count() << " ms");
  json rows = final_rows(run, "stop-after");
  REQUIRE(rows.size() == 1);
  CHECK(as_int(rows[0]["calls"]) == 2500);
}

TEST_CASE("--stop-after on the command line ends a query without stop_after") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("getppid-count.yml")},
                        .workload = {"getppid", "10"},
                        .extra_args = {"--stop-after", "1s"},
                        .stop = Stop::OnItsOwn});
  CHECK(run.status.exited_with(0));
  CHECK(as_int(final_rows(run, "getppid-count")[0]["count()"]) == 10);
}

TEST_CASE("SIGTERM ends a run like Ctrl-C: final print, exit 0") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("getppid-count.yml")},
                        .workload = {"getppid", "31"},
                        .stop_signal = SIGTERM});
  CHECK(run.status.exited_with(0));
  CHECK(as_int(final_rows(run, "getppid-count")[0]["count()"]) == 31);
}

std::vector<int64_t> minus(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  std::erase_if(a, [&](int64_t id) { return std::find(b.begin(), b.end(), id) != b.end(); });
  return a;
}

std::vector<int64_t> common(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  std::erase_if(a, [&](int64_t id) { return std::find(b.begin(), b.end(), id) == b.end(); });
  return a;
}

TEST_CASE("Ctrl-C prints the final result and unloads every program bpfql loaded") {
  BPFQL_REQUIRE_ROOT();
  if (std::string_view(BPFTOOL_BINARY).empty()) {
    MESSAGE("skipped: bpftool was not found at configure time");
    return;
  }
  std::vector<int64_t> before = tracepoint_program_ids();
  std::vector<int64_t> ours;
  TraceRun run = trace({.queries = {query_file("multi.yml")},
                        .workload = {"mixed", "20", "10"},
                        .while_tracing = [&](const Process&) {
                          ours = minus(tracepoint_program_ids(), before);
                        }});
  CHECK(run.status.exited_with(0));
  CHECK(as_int(final_rows(run, "calls")[0]["calls"]) == 20);
  CHECK(as_int(final_rows(run, "bytes")[0]["bytes"]) == 200);
  // Two queries, one tracepoint each: at least two programs appeared while bpfql ran.
  CHECK(ours.size() >= 2);
  // The kernel frees a closed program after an RCU grace period, so give it a moment; a program
  // that bpfql pinned or handed to another process would stay.
  std::vector<int64_t> left = common(tracepoint_program_ids(), ours);
  for (auto deadline = Clock::now() + std::chrono::seconds(5); !left.empty() && Clock::now() < deadline;) {
    std::this_thread::sleep_for(milliseconds(100));
    left = common(tracepoint_program_ids(), ours);
  }
  INFO("program ids still loaded 5 s after bpfql exited: " << json(left).dump());
  CHECK(left.empty());
}

TEST_CASE("a run on every syscall tracepoint ends at once; its programs are gone when it has") {
  BPFQL_REQUIRE_ROOT();
  // ~360 tracepoints. Closing a tracepoint's perf event waits for RCU grace periods, one
  // tracepoint after another (~40-70 ms each here): a detach holder process pays for that after
  // bpfql exits. Its programs used to stay attached meanwhile (24 s after exit on this VM, up
  // to ~40 s under load); linked, they come off when bpfql closes the links.
  TempDir dir;
  std::string q = dir.write("every-syscall.yml", R"(name: every-syscall
params:
  pid: {type: int}
probe: tracepoint:syscalls:sys_enter_*
where: pid == $pid
select: count() as calls
)");
  std::vector<uint32_t> programs;
  Clock::time_point stopping;
  TraceRun run = trace({.queries = {q},
                        .workload = {"getppid", "25"},
                        .while_tracing = [&](const Process& bpfql) {
                          programs = bpf_programs_held_by(bpfql.pid());
                        },
                        .after_workload = [&] { stopping = Clock::now(); }});
  auto exited = Clock::now();
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  CHECK(as_int(final_rows(run, "every-syscall")[0]["calls"]) >= 25);
  REQUIRE(!programs.empty());
  // The kernel frees a program after an RCU grace period once its last link is closed: the
  // same 5 s as for a single tracepoint (above), not the holder's ~360 grace periods.
  std::vector<uint32_t> left = still_loaded(programs, milliseconds(5000));
  auto gone = Clock::now();
  MESSAGE("every syscall tracepoint: stop → exit "
          << std::chrono::duration_cast<milliseconds>(exited - stopping).count()
          << " ms (including the final read), exit → programs gone "
          << std::chrono::duration_cast<milliseconds>(gone - exited).count() << " ms");
  CHECK_MESSAGE(left.empty(), "programs still loaded 5 s after bpfql exited: " << json(left).dump());
}

}  // namespace
}  // namespace bpfql::test
