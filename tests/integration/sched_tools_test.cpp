// The scheduler tools of the library (offcputime, wakeuptime, cpudist, runqlen), each side by
// side with a bpftrace rewrite on the same tracepoints (BCC's versions read kernel structs
// through the mismatched 6.1 headers here, and the .bt tools need kprobes) on the same workload
// at the same time, both filtered on the workload's process (`--pid`) at the same side of each
// span. What the workload fixes is compared exactly (blocks, wakeups and runs of the workload,
// the waker's name, the frames of each stack); times within a bound: both tools time the same
// events, only microseconds apart. Before --pid filtered only the sides that run in the task the
// span is about, offcputime, wakeuptime and cpudist found nothing here.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/histogram_compare.h"
#include "tests/integration/reference_tool.h"

namespace bpfql::test {
namespace {

// `bpftrace -e PROGRAM` where PROGRAM's BEGIN prints "ready"; PID in PROGRAM becomes `pid`.
std::vector<std::string> bpftrace_e(std::string program, pid_t pid) {
  for (size_t at = program.find("PID"); at != std::string::npos; at = program.find("PID", at))
    program.replace(at, 3, std::to_string(pid));
  return test::bpftrace_e(program);  // reference_tool.h's
}

// The library query NAME with `--pid` on the workload (whose exit ends the run), and bpftrace's
// `program` (PID: the workload's) started beside it before the workload runs.
TraceRun trace_beside(ReferenceTool& bt, const std::string& name, std::vector<std::string> workload,
                      const std::string& program) {
  return trace(
      {.queries = {library_query(name)},
       .workload = std::move(workload),
       .pass_pid = false,
       .pid_option = true,
       .stop = Stop::OnItsOwn,
       .while_tracing_pid = [&](pid_t pid) { bt.start(bpftrace_e(program, pid), "ready"); }});
}

// A kernel frame without its offset: "schedule+35" and "schedule+0x23" are "schedule".
std::string frame_name(const std::string& frame) {
  std::string f = frame.substr(frame.find_first_not_of(" \t"));
  return f.substr(0, f.find('+'));
}

// The frames of a stack from the scheduler's own (`__schedule`, `try_to_wake_up`) outward:
// above them are the tracer's frames, which differ between a raw tracepoint and bpftrace's.
std::vector<std::string> from_frame(std::vector<std::string> frames, const std::string& first) {
  auto at = std::find(frames.begin(), frames.end(), first);
  if (at != frames.end()) frames.erase(frames.begin(), at);
  return frames;
}

std::string stack_text(const std::vector<std::string>& frames) {
  std::string out;
  for (const auto& f : frames) out += (out.empty() ? "" : ";") + f;
  return out;
}

std::vector<std::string> json_frames(const json& stack) {
  std::vector<std::string> frames;
  for (const json& f : stack) frames.push_back(frame_name(f.get<std::string>()));
  return frames;
}

// One entry of a bpftrace map printed at exit: "@name[a, \n  frame+1\n  frame+2\n, b]: 42".
struct BpftraceEntry {
  std::vector<std::string> keys;    // the key's plain values ("bpfql-wl"), in order
  std::vector<std::string> frames;  // its stack's frames, innermost first, without offsets
  int64_t value = 0;
};

std::vector<BpftraceEntry> bpftrace_map(const std::vector<std::string>& lines,
                                        const std::string& name) {
  std::vector<BpftraceEntry> entries;
  std::optional<BpftraceEntry> open;
  auto plain_keys = [](std::string text, BpftraceEntry& e) {
    for (size_t at; !text.empty(); text = at == std::string::npos ? "" : text.substr(at + 1)) {
      at = text.find(',');
      std::string k = text.substr(0, at);
      k.erase(0, k.find_first_not_of(' '));
      k.erase(k.find_last_not_of(' ') + 1);
      if (!k.empty()) e.keys.push_back(k);
    }
  };
  for (const std::string& line : lines) {
    if (!open && line.rfind(name + ": ", 0) == 0) {  // a map without keys: "@runs: 142"
      entries.push_back({.value = std::stoll(line.substr(name.size() + 2))});
      continue;
    }
    if (!open) {
      if (line.rfind(name + "[", 0) != 0) continue;
      open.emplace();
      std::string rest = line.substr(name.size() + 1);
      size_t end = rest.rfind("]: ");
      if (end != std::string::npos) {  // all on one line
        plain_keys(rest.substr(0, end), *open);
        open->value = std::stoll(rest.substr(end + 3));
        entries.push_back(*open);
        open.reset();
      } else {
        plain_keys(rest, *open);
      }
      continue;
    }
    size_t end = line.rfind("]: ");
    if (end != std::string::npos) {  // ", b]: 42" or "]: 42": no frame holds "]: "
      plain_keys(line.substr(0, end), *open);
      open->value = std::stoll(line.substr(end + 3));
      entries.push_back(*open);
      open.reset();
    } else if (!line.empty() && line.find_first_not_of(' ') != std::string::npos) {
      open->frames.push_back(frame_name(line));
    }
  }
  return entries;
}

// bpftrace's hist()/lhist() as printed: "[1K, 2K)  48 |@@@|", "[0]  3 |@|"; lower bound -> count.
std::map<int64_t, int64_t> bpftrace_buckets(const std::vector<std::string>& lines,
                                            const std::string& name) {
  std::map<int64_t, int64_t> buckets;
  bool in = false;
  auto number = [](std::string text) {
    text.erase(0, text.find_first_not_of(' '));
    int64_t scale = 1;
    switch (text.empty() ? ' ' : text.back()) {
      case 'K':
        scale = 1LL << 10;
        break;
      case 'M':
        scale = 1LL << 20;
        break;
      case 'G':
        scale = 1LL << 30;
        break;
      default:
        break;
    }
    if (scale != 1) text.pop_back();
    return std::stoll(text) * scale;
  };
  for (const std::string& line : lines) {
    if (line.rfind("@", 0) == 0) {
      in = line.rfind(name + ":", 0) == 0;
      continue;
    }
    if (!in || line.empty() || line[0] != '[') continue;
    size_t close = line.find_first_of(",]");
    int64_t low = number(line.substr(1, close - 1));
    auto w = split_words(line.substr(line.find_first_of(")]") + 1));
    if (!w.empty() && std::stoll(w[0]) > 0) buckets[low] = std::stoll(w[0]);
  }
  return buckets;
}

std::map<int64_t, int64_t> bpfql_buckets(const json& hist) {
  std::map<int64_t, int64_t> buckets;
  for (const json& b : hist)
    if (as_int(b["count"]) > 0)
      buckets[b["min"].is_null() ? 0 : as_int(b["min"])] = as_int(b["count"]);
  return buckets;
}

std::string buckets_text(const std::map<int64_t, int64_t>& buckets) {
  std::string out;
  for (const auto& [low, count] : buckets)
    out += std::to_string(low) + ":" + std::to_string(count) + " ";
  return out;
}

// Time and number of spans, summed over rows.
struct Blocks {
  int64_t ns = 0, count = 0;
};

// Two tools' sums of the same spans: within 5 %, and 20 us a span (each tool's own work runs
// between the other's two clock reads).
void check_close_sums(const std::map<std::string, Blocks>& a,
                      const std::map<std::string, Blocks>& b) {
  Blocks sa, sb;
  for (const auto& [key, x] : a) sa.ns += x.ns, sa.count += x.count;
  for (const auto& [key, x] : b) sb.ns += x.ns, sb.count += x.count;
  INFO("sums: " << sa.ns << " ns in " << sa.count << " spans and " << sb.ns << " ns in "
                << sb.count);
  CHECK(sa.count == sb.count);
  CHECK(std::llabs(sa.ns - sb.ns) <= std::max(sa.ns, sb.ns) / 20 + 20'000 * sa.count);
}

TEST_CASE("offcputime side by side with a bpftrace rewrite: blocks by stack, time off CPU") {
  BPFQL_REQUIRE_ROOT();
  // Three sleeps, 100 blocks in a pipe's read() (workload.c's pingpong), whatever preemptions.
  const int64_t kTrips = 100;
  ReferenceTool bt;
  // The query's semantics, by hand: each switch first ends the span of the task switched in
  // (kept open when shorter than 1 us), then begins the one of the task switched out, with its
  // name and stack, when it is the workload's (its pid filter, at the begin).
  const std::string program =
      "tracepoint:sched:sched_switch { "
      "  $s = @start[args->next_pid]; "
      "  if ($s) { $d = nsecs - $s; if ($d >= 1000) { "
      "    @ns[@comm[args->next_pid], @stk[args->next_pid]] = sum($d); "
      "    @blocks[@comm[args->next_pid], @stk[args->next_pid]] = count(); "
      "    delete(@start[args->next_pid]); } } "
      "  if (args->prev_pid != 0 && pid == PID) { "
      "    @start[args->prev_pid] = nsecs; @comm[args->prev_pid] = comm; "
      "    @stk[args->prev_pid] = kstack; } } "
      "END { clear(@start); clear(@comm); clear(@stk); }";
  TraceRun run =
      trace_beside(bt, "sched/offcputime",
                   {"sleep", "20", "20", "20", "pingpong", std::to_string(kTrips)}, program);
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n"
       << run.err << "\nbpfql:\n"
       << run.out << "\nbpftrace:\n"
       << lines_text(reference));
  REQUIRE_MESSAGE(run.status.exited_with(0), "bpfql " << run.status.describe());

  std::map<std::string, Blocks> ours, theirs;  // "comm;frame;frame..." from __schedule out
  for (const json& row : final_rows(run, "offcputime")) {
    std::string key = row["comm"].get<std::string>() + ";" +
                      stack_text(from_frame(json_frames(row["stack"]), "__schedule"));
    ours[key].ns += as_int(row["ns"]);
    ours[key].count += as_int(row["blocks"]);
  }
  for (const auto& e : bpftrace_map(reference, "@ns")) {
    REQUIRE(e.keys.size() == 1);
    theirs[e.keys[0] + ";" + stack_text(from_frame(e.frames, "__schedule"))].ns += e.value;
  }
  for (const auto& e : bpftrace_map(reference, "@blocks"))
    theirs[e.keys[0] + ";" + stack_text(from_frame(e.frames, "__schedule"))].count += e.value;

  auto blocks_in = [](const std::map<std::string, Blocks>& by_stack, const std::string& frame) {
    Blocks sum;
    for (const auto& [key, b] : by_stack)
      if (key.find(frame) != std::string::npos) sum.ns += b.ns, sum.count += b.count;
    return sum;
  };
  for (const auto* side : {&ours, &theirs}) {
    CHECK(blocks_in(*side, "pipe_read").count == kTrips);  // anon_pipe_read on 6.18
    CHECK(blocks_in(*side, "do_nanosleep").count == 3);
    // Each sleep's timer is armed at the call, a few µs before the switch-out begins the span.
    CHECK(blocks_in(*side, "do_nanosleep").ns >= 59'000'000);
    for (const auto& [key, b] : *side) CHECK(key.rfind("bpfql-wl;__schedule;", 0) == 0);
  }
  MESSAGE("offcputime: bpfql pipe_read "
          << blocks_in(ours, "pipe_read").count << " blocks " << blocks_in(ours, "pipe_read").ns
          << " ns, nanosleep " << blocks_in(ours, "do_nanosleep").count << " blocks "
          << blocks_in(ours, "do_nanosleep").ns << " ns, " << ours.size()
          << " stacks; bpftrace pipe_read " << blocks_in(theirs, "pipe_read").count << " blocks "
          << blocks_in(theirs, "pipe_read").ns << " ns, nanosleep "
          << blocks_in(theirs, "do_nanosleep").count << " blocks "
          << blocks_in(theirs, "do_nanosleep").ns << " ns, " << theirs.size() << " stacks");
  // The same blocks, stack by stack (preemptions included: both see the same switches).
  REQUIRE(ours.size() == theirs.size());
  for (const auto& [key, b] : ours) {
    INFO("stack " << key);
    REQUIRE(theirs.count(key) == 1);
    CHECK(b.count == theirs[key].count);
  }
  // Both time each block at the same two switches; they differ by the other tool's work in
  // between (a stack read, map updates): 1 to 3 us a block measured here, more when the VM's
  // CPU is taken away in between, so the sums are compared, not each stack's.
  check_close_sums(ours, theirs);
  check_close_sums(std::map<std::string, Blocks>{{"nanosleep", blocks_in(ours, "do_nanosleep")}},
                   std::map<std::string, Blocks>{{"nanosleep", blocks_in(theirs, "do_nanosleep")}});
}

TEST_CASE(
    "wakeuptime side by side with a bpftrace rewrite: the waker, its stack, the time asleep") {
  BPFQL_REQUIRE_ROOT();
  const int64_t kTrips = 100;
  ReferenceTool bt;
  // Sleeps of the workload (switched out in a sleep state: not R, not R+) begin; its wakeup
  // ends them, with the waker's name and stack.
  const std::string program =
      "tracepoint:sched:sched_switch /args->prev_state != 0 && args->prev_state != 0x100 && pid == "
      "PID/ { "
      "  @start[args->prev_pid] = nsecs; } "
      "tracepoint:sched:sched_waking /@start[args->pid]/ { "
      "  @ns[comm, kstack, args->comm] = sum(nsecs - @start[args->pid]); "
      "  @wakeups[comm, kstack, args->comm] = count(); delete(@start[args->pid]); } "
      "END { clear(@start); }";
  TraceRun run = trace_beside(bt, "sched/wakeuptime",
                              {"sleep", "20", "20", "pingpong", std::to_string(kTrips)}, program);
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n"
       << run.err << "\nbpfql:\n"
       << run.out << "\nbpftrace:\n"
       << lines_text(reference));
  REQUIRE_MESSAGE(run.status.exited_with(0), "bpfql " << run.status.describe());

  // "waker;frame;...;target", the stack from try_to_wake_up out.
  std::map<std::string, Blocks> ours, theirs;
  for (const json& row : final_rows(run, "wakeuptime")) {
    std::string key = row["waker"].get<std::string>() + ";" +
                      stack_text(from_frame(json_frames(row["stack"]), "try_to_wake_up")) + ";" +
                      row["target"].get<std::string>();
    ours[key].ns += as_int(row["ns"]);
    ours[key].count += as_int(row["wakeups"]);
  }
  auto reference_key = [](const BpftraceEntry& e) {
    REQUIRE(e.keys.size() == 2);
    return e.keys[0] + ";" + stack_text(from_frame(e.frames, "try_to_wake_up")) + ";" + e.keys[1];
  };
  for (const auto& e : bpftrace_map(reference, "@ns")) theirs[reference_key(e)].ns += e.value;
  for (const auto& e : bpftrace_map(reference, "@wakeups"))
    theirs[reference_key(e)].count += e.value;

  auto by_pong_write = [](const std::map<std::string, Blocks>& by_key) {
    Blocks sum;
    for (const auto& [key, w] : by_key)
      if (key.rfind("bpfql-pong;", 0) == 0 && key.find("pipe_write") != std::string::npos)
        sum.ns += w.ns, sum.count += w.count;
    return sum;
  };
  // The child answers each trip once the workload has switched out: one wakeup each, made in
  // the child (sched_waking runs in the waker; sched_wakeup would often run in the idle task of
  // the sleeper's CPU, where a queued remote wakeup completes).
  CHECK(by_pong_write(ours).count == by_pong_write(theirs).count);
  for (const auto* side : {&ours, &theirs}) {
    CHECK(by_pong_write(*side).count == kTrips);
    for (const auto& [key, w] : *side) CHECK(key.substr(key.rfind(';')) == ";bpfql-wl");
  }
  MESSAGE("wakeuptime: bpfql bpfql-pong pipe_write "
          << by_pong_write(ours).count << " wakeups " << by_pong_write(ours).ns << " ns, "
          << ours.size() << " waker stacks; bpftrace " << by_pong_write(theirs).count << " wakeups "
          << by_pong_write(theirs).ns << " ns, " << theirs.size() << " waker stacks");
  REQUIRE(ours.size() == theirs.size());
  for (const auto& [key, w] : ours) {
    INFO("waker " << key);
    REQUIRE(theirs.count(key) == 1);
    CHECK(w.count == theirs[key].count);
  }
  check_close_sums(ours, theirs);
}

TEST_CASE("cpudist side by side with a bpftrace rewrite: the same runs, in the same buckets") {
  BPFQL_REQUIRE_ROOT();
  const int64_t kTrips = 100;
  ReferenceTool bt;
  // A switch ends the run of the task switched out (the workload's: the pid filter, at the
  // end) and begins the one of the task switched in.
  const std::string program =
      "tracepoint:sched:sched_switch { "
      "  $s = @start[args->prev_pid]; "
      "  if (pid == PID && $s) { @runs = count(); @ns = hist(nsecs - $s); "
      "    delete(@start[args->prev_pid]); } "
      "  if (args->next_pid != 0) { @start[args->next_pid] = nsecs; } } "
      "END { clear(@start); }";
  TraceRun run = trace_beside(
      bt, "sched/cpudist", {"pingpong", std::to_string(kTrips), "sleep", "20", "20", "spin", "30"},
      program);
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n"
       << run.err << "\nbpfql:\n"
       << run.out << "\nbpftrace:\n"
       << lines_text(reference));
  REQUIRE_MESSAGE(run.status.exited_with(0), "bpfql " << run.status.describe());

  int64_t runs = 0;
  std::map<int64_t, int64_t> ours;
  for (const json& print : intervals_of(run, "cpudist"))
    for (const json& row : print["rows"]) {
      runs += as_int(row["runs"]);
      for (const auto& [low, n] : bpfql_buckets(row["ns"])) ours[low] += n;
    }
  int64_t their_runs = -1;
  for (const auto& e : bpftrace_map(reference, "@runs")) their_runs = e.value;
  std::map<int64_t, int64_t> theirs = bpftrace_buckets(reference, "@ns");
  MESSAGE("cpudist: bpfql " << runs << " runs [" << buckets_text(ours) << "]; bpftrace "
                            << their_runs << " runs [" << buckets_text(theirs) << "]");
  // Each of the 100 blocks in read() and the two sleeps ends a run, and so does the exit.
  CHECK(runs >= kTrips + 3);
  CHECK(runs == their_runs);
  CHECK(total(ours) == total(theirs));
  CHECK(within_a_neighbour_bucket(ours, theirs));
}

// The highest CPU, for K spinners pinned there.
int last_cpu() {
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 1 ? static_cast<int>(n - 1) : 0;
}

TEST_CASE("runqlen side by side with a bpftrace rewrite: K busy processes on one CPU") {
  BPFQL_REQUIRE_ROOT();
  // The workload and two children spin on one CPU for 3 s: whenever the workload is the task
  // sampled, the queue it is on holds the other two.
  const int64_t kSpinners = 3;
  ReferenceTool bt;
  const std::string program =
      "profile:hz:99 /pid == PID/ { $q = curtask->se.cfs_rq->nr_queued; "
      "  @len = lhist($q > 0 ? $q - 1 : 0, 0, 32, 1); }";
  TraceRun run = trace_beside(
      bt, "sched/runqlen",
      {"spin-pinned", std::to_string(kSpinners), std::to_string(last_cpu()), "3000"}, program);
  std::vector<std::string> reference = bt.stop();
  INFO("stderr:\n"
       << run.err << "\nbpfql:\n"
       << run.out << "\nbpftrace:\n"
       << lines_text(reference));
  REQUIRE_MESSAGE(run.status.exited_with(0), "bpfql " << run.status.describe());
  std::map<int64_t, int64_t> ours;
  for (const json& print : intervals_of(run, "runqlen"))
    for (const json& row : print["rows"])
      for (const auto& [low, n] : bpfql_buckets(row["runqlen"])) ours[low] += n;
  std::map<int64_t, int64_t> theirs = bpftrace_buckets(reference, "@len");
  MESSAGE("runqlen while the workload runs: bpfql [" << buckets_text(ours) << "]; bpftrace ["
                                                     << buckets_text(theirs) << "]");
  for (const auto* side : {&ours, &theirs}) {
    // The workload gets a third of its group's share of the CPU at least, for 3 s at 99 Hz.
    CHECK(total(*side) >= 5);
    REQUIRE(!side->empty());
    // Never fewer than the other spinners while they spin; more when a task of its group also
    // waits there, or has just gone to sleep (EEVDF keeps it queued, in nr_queued, until its lag
    // is spent). A sample may land in the moments the workload runs alone (forking, migrating
    // to the CPU, reaping, exiting): one in ten at most.
    int64_t fewer = 0;
    for (const auto& [low, n] : *side)
      if (low < kSpinners - 1) fewer += n;
    CHECK(fewer <= std::max<int64_t>(1, total(*side) / 10));
  }
}

}  // namespace
}  // namespace bpfql::test
