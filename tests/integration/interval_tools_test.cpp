// funcinterval and runqslower side by side with a reference on the same workload at the same
// time. funcinterval: BCC's funcinterval-bpfcc, on a function the traced one calls once per
// call (python3-bpfcc 0.26 passes the kernel a garbage ref_ctr_offset, and the kernel refuses a
// second uprobe at an address that has one with another ref_ctr_offset: see
// more_tools_test.cpp).
// runqslower: a bpftrace rewrite on the scheduler tracepoints (runqslower-bpfcc reads
// task_struct through the 6.1 headers and prints nothing on this kernel, even with four
// spinners on one CPU).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tests/integration/bcc_histogram.h"
#include "tests/integration/harness.h"
#include "tests/integration/histogram_compare.h"
#include "tests/integration/reference_tool.h"

namespace bpfql::test {
namespace {

Buckets bpfql_buckets(const json& hist) {
  Buckets out;
  for (const json& b : hist)
    if (as_int(b["count"]) > 0) out[b["min"].is_null() ? 0 : as_int(b["min"])] += as_int(b["count"]);
  return out;
}

TEST_CASE("funcinterval side by side with funcinterval-bpfcc: the same intervals, in the same buckets") {
  BPFQL_REQUIRE_ROOT();
  // 20 calls 3 ms apart, then at once 20 calls 12 ms apart: 39 intervals, 19 of about 3 ms, one
  // without a sleep (between the steps: 30 to 250 µs measured, both tools' uprobes included),
  // 19 of about 12 ms.
  const int64_t kIntervals = 39;
  ReferenceTool bcc;
  TraceRun run = trace(
      {.queries = {library_query("sched/funcinterval")},
       .workload = {"ticks", "20", "3", "ticks", "20", "12"},
       .params = {{"target", BPFQL_WORKLOAD}, {"function", "bpfql_wl_tick"}},
       .pass_pid = false,
       .pid_option = true,
       .while_tracing_pid = [&](pid_t pid) {
         // bpfql_wl_tick calls bpfql_wl_tock once, first thing: the same intervals, shifted.
         bcc.start({"/usr/sbin/funcinterval-bpfcc", "-p", std::to_string(pid),
                    std::string(BPFQL_WORKLOAD) + ":^bpfql_wl_tock$"},
                   "Hit Ctrl-C to end.");
       }});
  std::vector<std::string> reference = bcc.stop();
  INFO("stderr:\n" << run.err << "\nbpfql:\n" << run.out << "\nfuncinterval-bpfcc:\n"
                   << lines_text(reference) << bcc.err());
  REQUIRE_MESSAGE(run.status.exited_with(0), "bpfql " << run.status.describe());
  int64_t intervals = 0;
  Buckets ours;
  for (const json& print : intervals_of(run, "funcinterval"))
    for (const json& row : print["rows"]) {
      CHECK(row["comm"] == "bpfql-wl");
      intervals += as_int(row["intervals"]);
      for (const auto& [low, n] : bpfql_buckets(row["ns"])) ours[low] += n;
    }
  Buckets theirs = bcc_histograms(reference)[""];
  MESSAGE("funcinterval: bpfql " << intervals << " intervals [" << describe_buckets(ours)
          << "]; funcinterval-bpfcc [" << describe_buckets(theirs) << "]");
  CHECK(intervals == kIntervals);
  CHECK(total(ours) == kIntervals);
  CHECK(total(theirs) == kIntervals);
  CHECK(within_a_neighbour_bucket(ours, theirs));
  // The sleeps fix the buckets from below: each spacing is at least its sleep.
  int64_t at_least_12ms = 0, at_least_3ms = 0;
  for (const auto& [low, n] : ours) {
    if (low >= (int64_t{1} << 23)) at_least_12ms += n;  // [8.4 ms, ...)
    if (low >= (int64_t{1} << 21)) at_least_3ms += n;   // [2.1 ms, ...)
  }
  CHECK(at_least_12ms >= 19);
  CHECK(at_least_3ms >= 38);
}

// One wait over the threshold: who waited, how long, and who ran before it.
struct SlowWait {
  std::string comm;
  int64_t tid = 0, ns = 0;
  std::string prev_comm;
  int64_t prev_tid = 0;
};

std::string wait_text(const SlowWait& w) {
  return w.comm + " " + std::to_string(w.tid) + " " + std::to_string(w.ns) + " after " + w.prev_comm +
         " " + std::to_string(w.prev_tid);
}

// "done starve-hog 4242" in the workload's report.
int64_t reported(const std::string& out, const std::string& step) {
  auto at = out.find("done " + step + " ");
  REQUIRE_MESSAGE(at != std::string::npos, "the workload did not report " << step << ":\n" << out);
  return std::stoll(out.substr(at + step.size() + 6));
}

// Waits of tid over `at_least` ns.
int64_t waits_over(const std::vector<SlowWait>& waits, int64_t tid, int64_t at_least) {
  return std::count_if(waits.begin(), waits.end(),
                       [&](const SlowWait& w) { return w.tid == tid && w.ns > at_least; });
}

TEST_CASE("runqslower side by side with a bpftrace rewrite: a starved task's long waits") {
  BPFQL_REQUIRE_ROOT();
  // Two hogs and a nice-19 task that needs 6 ms of CPU on one CPU: it gets about 1/140 of it,
  // and each time it is preempted it waits hundreds of ms (0.1 to 1 s measured here) while the
  // hogs take turns; theirs are a few ms (30 to 40 on a busy machine).
  const int64_t kMin = 80'000'000;
  // Both tools take their timestamps at the same two events, programs apart: microseconds, or
  // hundreds of them when the host stops the vCPU in between.
  const int64_t kMargin = 5'000'000;
  const int cpu = static_cast<int>(std::max<long>(0, ::sysconf(_SC_NPROCESSORS_ONLN) - 1));
  ReferenceTool bt;
  // The query's semantics by hand, machine-wide as the query runs: a wait begins at a wakeup or
  // a preemption (prev_state's state bits 0), ends at the switch-in; printed over the threshold.
  const std::string program =
      "BEGIN { printf(\"ready\\n\"); } "
      "tracepoint:sched:sched_wakeup, tracepoint:sched:sched_wakeup_new /args->pid != 0/ { "
      "  @q[args->pid] = nsecs; } "
      "tracepoint:sched:sched_switch { "
      "  if (args->prev_pid != 0 && (args->prev_state & 0xff) == 0) { @q[args->prev_pid] = nsecs; } "
      "  $ts = @q[args->next_pid]; "
      "  if ($ts) { $d = nsecs - $ts; delete(@q[args->next_pid]); "
      "    if ($d > " + std::to_string(kMin) + ") { printf(\"slow %s %d %d %s %d\\n\", "
      "      args->next_comm, args->next_pid, $d, args->prev_comm, args->prev_pid); } } } "
      "END { clear(@q); }";
  TraceRun run = trace({.queries = {library_query("sched/runqslower")},
                        .workload = {"starve", std::to_string(cpu), "6"},
                        .params = {{"min", "80ms"}},
                        .pass_pid = false,  // machine-wide: -p pid= would leave out the children
                        .while_tracing = [&](const Process&) {
                          bt.start({bpftrace_binary(), "-e", program}, "ready");
                        }});
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n" << run.err << "\nbpftrace:\n" << lines_text(reference));
  REQUIRE(!bt.lost_events());
  const int64_t wl = run.workload_pid, hog = reported(run.workload_out, "starve-hog"),
                starved = reported(run.workload_out, "starve-starved");
  const std::set<int64_t> workload_tids = {wl, hog, starved};
  // The workload's waits only: other tasks' waits began or ended outside one tool's window.
  std::vector<SlowWait> ours, theirs;
  for (const json& e : events_of(run, "runqslower")) {
    SlowWait w{e["comm"].get<std::string>(), as_int(e["tid"]), as_int(e["wait_ns"]),
               e["prev_comm"].get<std::string>(), as_int(e["prev_tid"])};
    CHECK(w.ns > kMin);
    if (workload_tids.count(w.tid)) ours.push_back(w);
  }
  for (const std::string& line : reference) {
    auto f = split_words(line);  // slow COMM TID NS PREV_COMM PREV_TID (comms have no spaces here)
    if (f.size() != 6 || f[0] != "slow") continue;
    SlowWait w{f[1], std::stoll(f[2]), std::stoll(f[3]), f[4], std::stoll(f[5])};
    if (workload_tids.count(w.tid)) theirs.push_back(w);
  }
  std::vector<std::string> our_text, their_text;
  for (const auto& w : ours) our_text.push_back(wait_text(w));
  for (const auto& w : theirs) their_text.push_back(wait_text(w));
  INFO("bpfql:\n" << lines_text(our_text) << "bpftrace:\n" << lines_text(their_text));
  MESSAGE("runqslower: the starved task (" << starved << ") waited over 80 ms " << waits_over(ours, starved, kMin)
          << " times in bpfql, " << waits_over(theirs, starved, kMin) << " in bpftrace; the hogs "
          << waits_over(ours, wl, kMin) + waits_over(ours, hog, kMin) << " and "
          << waits_over(theirs, wl, kMin) + waits_over(theirs, hog, kMin));
  // It is preempted and waits long at least once (each time, in practice).
  CHECK(waits_over(ours, starved, kMin) >= 1);
  CHECK(waits_over(theirs, starved, kMin) >= 1);
  for (const auto& w : ours) {
    CHECK(w.comm == (w.tid == wl ? "bpfql-wl" : w.tid == hog ? "bpfql-hog" : "bpfql-starved"));
    CHECK(w.ns < 30'000'000'000);  // within the workload's run
  }
  // The same waits: a wait clearly over the threshold in one tool is over it in the other.
  for (int64_t tid : workload_tids) {
    INFO("tid " << tid);
    CHECK(waits_over(ours, tid, kMin + kMargin) <= waits_over(theirs, tid, kMin));
    CHECK(waits_over(theirs, tid, kMin + kMargin) <= waits_over(ours, tid, kMin));
  }
  // Wait by wait, in the order they ended (each task's waits end on its one CPU, whose events
  // each tool reads in order): the same length within the margin and the same task before it.
  for (int64_t tid : workload_tids) {
    std::vector<SlowWait> a, b;
    for (const auto& w : ours)
      if (w.tid == tid && w.ns > kMin + kMargin) a.push_back(w);
    for (const auto& w : theirs)
      if (w.tid == tid && w.ns > kMin + kMargin) b.push_back(w);
    if (a.size() != b.size()) continue;  // one near the threshold in one tool: counted above
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("bpfql " << wait_text(a[i]) << ", bpftrace " << wait_text(b[i]));
      CHECK(std::llabs(a[i].ns - b[i].ns) <= kMargin);
      CHECK(a[i].prev_tid == b[i].prev_tid);
      CHECK(a[i].prev_comm == b[i].prev_comm);
    }
  }
}

}  // namespace
}  // namespace bpfql::test
