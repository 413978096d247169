// The integration pattern, once: start a workload that waits, start `bpfql run` on it, wait for
// "Tracing", release the workload, stop bpfql (SIGINT, or let stop_after end it), and parse the
// NDJSON it printed. Tests then assert exact numbers on the records.
#pragma once

#include <csignal>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"

namespace bpfql::test {

using nlohmann::json;

bool is_root();

// Every kernel test starts with this: as non-root it says why and skips the test case.
#define BPFQL_REQUIRE_ROOT()                                                    \
  do {                                                                          \
    if (!::bpfql::test::is_root()) {                                            \
      MESSAGE("skipped: loading BPF programs needs root (CI runs as root)");    \
      return;                                                                   \
    }                                                                           \
  } while (0)

// A fresh directory under /tmp, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `text` to file(name) and returns its path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

// tests/integration/queries/NAME
std::string query_file(const std::string& name);
// The library query NAME ("sched/runqlat"): its file in the source tree's queries/.
std::string library_query(const std::string& name);

// Interrupt: send `stop_signal` once the workload finished. OnItsOwn: wait for stop_after.
enum class Stop { Interrupt, OnItsOwn };

struct TraceSpec {
  std::vector<std::string> queries;             // files (or library names) given to `bpfql run`
  std::vector<std::string> workload;            // bpfql-workload steps, e.g. {"getppid", "1000"}
  std::map<std::string, std::string> params;    // -p k=v; "pid" is added unless pass_pid is false
  bool pass_pid = true;
  bool pid_option = false;                      // also pass `--pid WORKLOAD_PID`
  // Another program to trace instead of bpfql-workload (argv), e.g. {BPFQL_UPROBE_TARGET, "100"};
  // like the workloads it must wait for a line on stdin before doing anything.
  std::vector<std::string> command;
  std::string format = "json";                  // -f
  std::vector<std::string> extra_args;          // anything else for `bpfql run`
  Stop stop = Stop::Interrupt;
  int stop_signal = SIGINT;
  // Called while bpfql is attached, before the workload is released.
  std::function<void(Process& bpfql)> while_tracing;
  // The same, for callers that need the workload's pid (a reference tool filtered on it).
  std::function<void(pid_t workload_pid)> while_tracing_pid;
  // Called after the workload finished, before bpfql is stopped (for example to sleep so that
  // interval prints happen).
  std::function<void()> after_workload;
};

struct TraceRun {
  pid_t workload_pid = -1;
  std::string workload_out;
  ExitStatus status;       // bpfql's
  std::string out;         // bpfql's stdout
  std::string err;         // bpfql's stderr
  std::vector<json> records;  // stdout parsed as NDJSON (json format only)
};

// Runs the pattern; fails the test (REQUIRE) when bpfql does not attach, the workload fails,
// bpfql does not stop within its deadline or prints a line that is not JSON.
TraceRun trace(const TraceSpec& spec);

// Aggregate records ({"query":..,"rows":[..]}) of one query, in print order.
std::vector<json> intervals_of(const TraceRun& run, const std::string& query);
// The rows of the last aggregate record of `query` (the final print). Fails when there is none.
json final_rows(const TraceRun& run, const std::string& query);
// Streamed event records of one query.
std::vector<json> events_of(const TraceRun& run, const std::string& query);
// The streamed events of `query` whose "pid" is the workload's.
std::vector<json> events_of_pid(const TraceRun& run, const std::string& query);

// The one row whose fields equal all of `match`; fails (and shows the rows) when there is not
// exactly one.
json row_where(const json& rows, const json& match);

// A JSON integer as int64 (fails when the value is not an integer).
int64_t as_int(const json& value);
double as_double(const json& value);

// Program ids of loaded BPF programs of type tracepoint (`bpftool prog list -j`).
std::vector<int64_t> tracepoint_program_ids();

}  // namespace bpfql::test
