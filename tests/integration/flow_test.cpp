// `nest: true` and `report: flow` on CPython's function entry/return USDT probes: a script the
// test writes makes a fixed tree of calls (main → f → g → g → g (recursive) → h, three times);
// bpfql must print every call and return in order at its depth, measure each level of the
// recursion on its own, and agree line for line with a reference on the same probes.
//
// The reference is a bpftrace rewrite of uflow (a per-tid depth map), run beside bpfql on the
// same process. uflow -l python (BCC) runs here too, but beside bpfql it cannot attach at the
// same USDT probes (python3-bpfcc 0.26 passes the kernel a garbage ref_ctr_offset: "ref_ctr_offset
// mismatch"), so it is compared on its own run of the same script.
//
// The script is pinned to CPU 0: rows come through per-CPU perf buffers, and one thread's rows
// on one CPU arrive in order (bpfql's and the references' alike).
//
// Then a recursive C function of the workload (`levels N DEPTH`) on a uprobe and its
// uretprobe: each level is its own span, and past 64 levels (the stack's, and the kernel's
// pending return probes) the deeper calls are dropped while the levels within stay in step.
#include <doctest/doctest.h>
#include <unistd.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/reference_tool.h"

namespace bpfql::test {
namespace {

constexpr const char* kPython = "/usr/bin/python3.11";
constexpr const char* kTaskset = "/usr/bin/taskset";

// CPython 3.11 fires function__entry only while a profile hook is installed: `slice` is a C
// function that takes the hook's three arguments, so the hook adds no Python frames of its own.
constexpr const char* kScript = R"(import sys
def h(x): return x + 1
def g(n):
    if n > 0: return g(n - 1)
    return h(n)
def f(): return g(2) + h(5)
def main():
    for i in range(3): f()
sys.stdin.readline()
sys.setprofile(slice)
main()
sys.setprofile(None)
print("done")
)";

// One row of the flow: "->" or "<-", the depth, the function.
using FlowLine = std::tuple<std::string, int64_t, std::string>;

std::string describe(const std::vector<FlowLine>& lines) {
  std::string out;
  for (const auto& [dir, depth, fn] : lines)
    out += std::string(2 * static_cast<size_t>(depth), ' ') + dir + " " + fn + "\n";
  return out;
}

// What the script does, in closed form: main at depth 0 (its entry is the first one seen),
// then three times f → g(2) → g(1) → g(0) → h, and h(5) from f.
std::vector<FlowLine> expected_flow() {
  std::vector<FlowLine> out{{"->", 0, "main"}};
  for (int i = 0; i < 3; ++i) {
    out.push_back({"->", 1, "f"});
    for (int d = 2; d <= 4; ++d) out.push_back({"->", d, "g"});
    out.push_back({"->", 5, "h"});
    out.push_back({"<-", 5, "h"});
    for (int d = 4; d >= 2; --d) out.push_back({"<-", d, "g"});
    out.push_back({"->", 2, "h"});
    out.push_back({"<-", 2, "h"});
    out.push_back({"<-", 1, "f"});
  }
  out.push_back({"<-", 0, "main"});
  return out;
}

bool python_has_usdt() {
  if (::access(kPython, X_OK) != 0 || ::access(kTaskset, X_OK) != 0) return false;
  Completed listed =
      run_to_completion({BPFQL_BINARY, "list", "probes", kPython}, milliseconds(60000));
  return listed.out.find("python:function__entry") != std::string::npos;
}

// "    -> g" → {"->", 2, "g"}: uflow's METHOD column (and flow()'s), two spaces a level.
std::optional<FlowLine> parse_method(const std::string& method) {
  size_t spaces = method.find_first_not_of(' ');
  if (spaces == std::string::npos || spaces % 2 != 0 || method.size() < spaces + 4) return {};
  std::string dir = method.substr(spaces, 2);
  if ((dir != "->" && dir != "<-") || method[spaces + 2] != ' ') return {};
  return FlowLine{dir, static_cast<int64_t>(spaces / 2), method.substr(spaces + 3)};
}

// The script's own functions: the references also print the return of its `<module>` frame,
// which began before the trace (bpfql drops such an end: `unmatched: drop`).
bool script_function(const std::string& name) {
  return name == "main" || name == "f" || name == "g" || name == "h";
}

// The bpftrace rewrite of uflow: "DIR DEPTH FILE FUNCTION", depth per thread as bpfql keeps it
// (a return at depth 0, of a call begun before the trace, stays at 0).
std::string bpftrace_flow(pid_t pid) {
  std::string probe = std::string("usdt:") + kPython + ":python:function__";
  return probe + "entry /pid == " + std::to_string(pid) +
         "/ { printf(\"-> %d %s %s\\n\", @d[tid], str(arg0), str(arg1)); @d[tid]++; } " + probe +
         "return /pid == " + std::to_string(pid) +
         "/ { if (@d[tid] > 0) { @d[tid]--; } printf(\"<- %d %s %s\\n\", @d[tid], str(arg0), "
         "str(arg1)); }";
}

}  // namespace

TEST_CASE(
    "nest and report: flow on Python: every call and return in order, at its depth, beside "
    "bpftrace") {
  BPFQL_REQUIRE_ROOT();
  if (!python_has_usdt()) {
    MESSAGE("skipped: no " << kPython << " with USDT probes (or no taskset)");
    return;
  }
  TempDir dir;
  std::string script = dir.write("flow.py", kScript);
  ReferenceTool bpftrace;
  TraceRun run =
      trace({.queries = {query_file("python-nest.yml"),
                         std::string(BPFQL_QUERY_LIBRARY_DIR) + "/lang/uflow-python.yml"},
             .params = {{"python", kPython}},
             .pass_pid = false,
             .pid_option = true,
             .command = {kTaskset, "-c", "0", kPython, script},
             .while_tracing_pid = [&](pid_t pid) {
               bpftrace.start(bpftrace_e(bpftrace_flow(pid)), "ready");
             }});
  std::vector<std::string> reference = bpftrace.stop();
  INFO("stderr:\n" << run.err << "\nbpftrace:\n" << lines_text(reference) << bpftrace.err());
  REQUIRE_MESSAGE(run.status.exited_with(0), "bpfql " << run.status.describe());
  CHECK(run.workload_out == "done\n");
  const std::vector<FlowLine> expected = expected_flow();

  // The test's own flow query: depth, and duration only at ends.
  std::vector<FlowLine> flow;
  std::map<int64_t, int64_t> g_duration;  // depth → the last call of g's duration at that depth
  std::map<std::string, int64_t> begins, ends;
  for (const json& e : events_of(run, "python-flow")) {
    if (e["file"] != script) continue;
    std::string fn = e["function"].get<std::string>();
    auto method = parse_method(e["method"].get<std::string>());
    REQUIRE_MESSAGE(method, "not a flow() line: " << e.dump());
    auto [dir_text, method_depth, method_fn] = *method;
    CHECK(method_depth == as_int(e["depth"]));
    CHECK(method_fn == fn);
    flow.push_back({dir_text, as_int(e["depth"]), fn});
    if (dir_text == "->") {
      ++begins[fn];
      CHECK_MESSAGE(e["duration"].is_null(), "a begin row has no duration: " << e.dump());
    } else {
      ++ends[fn];
      REQUIRE_MESSAGE(e["duration"].is_number_integer(), "an end row's duration: " << e.dump());
      if (fn == "g") g_duration[as_int(e["depth"])] = as_int(e["duration"]);
    }
  }
  INFO("python-flow:\n" << describe(flow));
  CHECK(flow == expected);
  CHECK(begins == std::map<std::string, int64_t>{{"main", 1}, {"f", 3}, {"g", 9}, {"h", 6}});
  CHECK(ends == begins);
  // Each level of the recursion is timed on its own: a call contains the calls inside it.
  REQUIRE(g_duration.size() == 3);
  CHECK(g_duration[2] > g_duration[3]);
  CHECK(g_duration[3] > g_duration[4]);

  // The library's uflow-python: the same lines, from its METHOD column alone.
  std::vector<FlowLine> library;
  for (const json& e : events_of(run, "uflow-python")) {
    if (e["file"] != script) continue;
    auto method = parse_method(e["method"].get<std::string>());
    REQUIRE_MESSAGE(method, "not a flow() line: " << e.dump());
    library.push_back(*method);
    CHECK(as_int(e["pid"]) == run.workload_pid);
    CHECK(as_int(e["cpu"]) == 0);
  }
  CHECK(library == expected);

  // Funclatency by depth: every level of g counted once a round, each containing the next.
  json rows = final_rows(run, "python-depth");
  for (const auto& [fn, depth, calls] :
       std::vector<std::tuple<std::string, int, int>>{{"main", 0, 1},
                                                      {"f", 1, 3},
                                                      {"g", 2, 3},
                                                      {"g", 3, 3},
                                                      {"g", 4, 3},
                                                      {"h", 5, 3},
                                                      {"h", 2, 3}})
    CHECK(as_int(row_where(rows, {{"function", fn}, {"depth", depth}})["calls"]) == calls);
  int64_t g2 = as_int(row_where(rows, {{"function", "g"}, {"depth", 2}})["total"]);
  int64_t g3 = as_int(row_where(rows, {{"function", "g"}, {"depth", 3}})["total"]);
  int64_t g4 = as_int(row_where(rows, {{"function", "g"}, {"depth", 4}})["total"]);
  CHECK(g2 > g3);
  CHECK(g3 > g4);

  // bpftrace, beside: the same lines for the script's functions.
  std::vector<FlowLine> theirs;
  for (const std::string& line : reference) {
    auto w = split_words(line);
    if (w.size() != 4 || (w[0] != "->" && w[0] != "<-") || w[2] != script || !script_function(w[3]))
      continue;
    theirs.push_back({w[0], std::stoll(w[1]), w[3]});
  }
  INFO("bpftrace's lines:\n" << describe(theirs));
  CHECK(theirs == expected);
  CHECK(theirs == flow);
}

TEST_CASE("uflow-python beside uflow -l python (BCC) on its own run of the same script") {
  BPFQL_REQUIRE_ROOT();
  if (!python_has_usdt() || ::access("/usr/sbin/uflow", X_OK) != 0) {
    MESSAGE("skipped: no " << kPython << " with USDT probes, or no /usr/sbin/uflow");
    return;
  }
  TempDir dir;
  std::string script = dir.write("flow.py", kScript);
  // uflow on a run of its own: started on the waiting script, which is then released.
  Process python = Process::spawn({kTaskset, "-c", "0", kPython, script});
  ReferenceTool uflow;
  uflow.start({"/usr/sbin/uflow", "-l", "python", std::to_string(python.pid())},
              "Tracing method calls");
  REQUIRE(python.write_stdin("go\n"));
  REQUIRE(python.wait(std::chrono::milliseconds(30000)).has_value());
  uflow.pump(std::chrono::milliseconds(1000));
  std::vector<std::string> reference = uflow.stop();
  INFO("uflow:\n" << lines_text(reference) << uflow.err());
  // uflow prints "CPU PID TID TIME METHOD", TIME left-aligned in 8 columns and a space, and
  // METHOD as two spaces a level, "-> " or "<- ", then FILE.FUNCTION.
  std::vector<FlowLine> theirs;
  for (const std::string& line : reference) {
    auto w = split_words(line);
    if (w.size() != 6 || (w[4] != "->" && w[4] != "<-") || !w[5].starts_with(script + ".") ||
        !script_function(w[5].substr(script.size() + 1)))
      continue;
    size_t time_at = line.find(" " + w[3] + " ") + 1;
    size_t method_at = time_at + std::max<size_t>(8, w[3].size()) + 1;
    size_t arrow = line.find(w[4] + " ", method_at);
    REQUIRE_MESSAGE((arrow - method_at) % 2 == 0, "uflow's indentation: " << line);
    theirs.push_back(
        {w[4], static_cast<int64_t>((arrow - method_at) / 2), w[5].substr(script.size() + 1)});
  }
  INFO("uflow's lines:\n" << describe(theirs));
  CHECK(theirs == expected_flow());

  // bpfql's library query on another run of the same script.
  TraceRun run =
      trace({.queries = {std::string(BPFQL_QUERY_LIBRARY_DIR) + "/lang/uflow-python.yml"},
             .params = {{"python", kPython}},
             .pass_pid = false,
             .pid_option = true,
             .command = {kTaskset, "-c", "0", kPython, script}});
  REQUIRE_MESSAGE(run.status.exited_with(0), "bpfql " << run.status.describe() << "\n" << run.err);
  std::vector<FlowLine> ours;
  for (const json& e : events_of(run, "uflow-python"))
    if (e["file"] == script)
      if (auto method = parse_method(e["method"].get<std::string>())) ours.push_back(*method);
  CHECK(ours == theirs);
}

}  // namespace bpfql::test

namespace bpfql::test {

TEST_CASE("nest: a recursive C function, each level its own span (funclatency by depth)") {
  BPFQL_REQUIRE_ROOT();
  constexpr int kRounds = 7, kDeepest = 4;  // 7 calls of bpfql_wl_levels(4): 5 levels each
  TraceRun run = trace({.queries = {query_file("recurse-depth.yml")},
                        .workload = {"levels", std::to_string(kRounds), std::to_string(kDeepest)},
                        .params = {{"target", BPFQL_WORKLOAD}},
                        .pass_pid = false,
                        .pid_option = true});
  INFO("stderr:\n" << run.err << "\nstdout:\n" << run.out);
  REQUIRE_MESSAGE(run.status.exited_with(0), "bpfql " << run.status.describe());
  CHECK(run.workload_out == "done levels " + std::to_string(kRounds) + "\n");
  json rows = final_rows(run, "recurse-nested");
  REQUIRE(rows.size() == kDeepest + 1);
  int64_t outer_total = -1;
  for (int depth = 0; depth <= kDeepest; ++depth) {
    json row = row_where(rows, {{"depth", depth}});
    CHECK(as_int(row["calls"]) == kRounds);
    // The call at depth d was given DEPTH - d: each level's begin captured its own argument.
    CHECK(as_int(row["level"]) == kDeepest - depth);
    CHECK(as_int(row["level_max"]) == kDeepest - depth);
    // Each call contains the calls below it.
    int64_t total = as_int(row["total"]);
    if (outer_total >= 0) CHECK(total < outer_total);
    outer_total = total;
  }
  // Keyed by tid alone, the latest begin (the innermost call) wins: one span a round.
  json latest = final_rows(run, "recurse-latest");
  REQUIRE(latest.size() == 1);
  CHECK(as_int(latest[0]["calls"]) == kRounds);
  CHECK(as_int(latest[0]["level"]) == 0);
}

TEST_CASE("nest past 64 levels: deeper calls are dropped, counted, and the stack stays in step") {
  BPFQL_REQUIRE_ROOT();
  // 71 levels a round; the kernel keeps 64 return probes pending a thread (its log says "omit
  // uretprobe due to nestedness limit"), and a nest stores 64 levels: the 7 deepest begins of
  // each round are dropped (neither stored nor counted: their returns never come), and every
  // round measures levels 0..63 again from depth 0.
  constexpr int kRounds = 3, kDeepest = 70, kStored = 64;
  TraceRun run = trace({.queries = {query_file("recurse-overflow.yml")},
                        .workload = {"levels", std::to_string(kRounds), std::to_string(kDeepest)},
                        .params = {{"target", BPFQL_WORKLOAD}},
                        .pass_pid = false,
                        .pid_option = true});
  INFO("stderr:\n" << run.err << "\nstdout:\n" << run.out);
  REQUIRE_MESSAGE(run.status.exited_with(0), "bpfql " << run.status.describe());
  for (const char* query : {"overflow-nested", "overflow-kept"}) {
    CAPTURE(query);
    json rows = final_rows(run, query);
    CHECK(rows.size() == kStored);
    for (int depth = 0; depth < kStored; ++depth)
      CHECK(as_int(row_where(rows, {{"depth", depth}})["calls"]) == kRounds);
    CHECK(as_int(intervals_of(run, query).back()["dropped"]) == kRounds * (kDeepest + 1 - kStored));
  }
  json nested = final_rows(run, "overflow-nested");
  for (int depth = 0; depth < kStored; ++depth)
    CHECK(as_int(row_where(nested, {{"depth", depth}})["level"]) == kDeepest - depth);
}

}  // namespace bpfql::test
