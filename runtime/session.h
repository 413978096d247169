// Runs a Plan: load and attach through libbcc, print every interval, stream events, and on
// Ctrl-C / SIGTERM / stop_after print the final result, detach, and return.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/plan.h"
#include "runtime/collect/output.h"

namespace bpfql {

// `run -c`: the command bpfql started (runtime/held_command.h), held until every probe is
// attached. The run releases it after attaching and ends, with the final print, when it exits.
class TracedCommand {
 public:
  virtual ~TracedCommand() = default;
  virtual void release() = 0;
  virtual int exit_fd() const = 0;  // readable once the command has exited (a pidfd)
  virtual std::string exited() = 0;  // reaps it: "command x (pid N) exited with status S"
};

// `bpfql serve`: SIGHUP re-reads the queries (runtime/serve/reload.h). The session asks for the
// new Plan while the old one keeps running, loads it, carries the state of the queries that did
// not change into the new maps, attaches it, and only then detaches the old program; when any
// step fails the old Plan keeps running and reload_failed() says why.
class Reloader {
 public:
  virtual ~Reloader() = default;
  // The new Plan (prepared as the first one was), or nullptr after saying why on stderr.
  virtual std::unique_ptr<Plan> next_plan() = 0;
  // Which queries of `next` are unchanged from `current` (same generated code and values): by
  // index in next.queries, the index in current.queries.
  virtual std::map<size_t, size_t> unchanged(const Plan& current, const Plan& next) = 0;
  // `next` runs now; `kept`: the queries whose state was carried over (their names).
  virtual void reloaded(const Plan& next, const std::vector<std::string>& kept) = 0;
  virtual void reload_failed(const std::string& why) = 0;
};

struct RunOptions {
  OutputFormat format = OutputFormat::Table;
  TimeShown time = TimeShown::Wall;  // --time: how tables show a streamed event's time
  std::string output_path;  // "" = stdout
  bool verbose = false;     // -v: verifier log and libbcc's compiler messages
  // After attach: no_new_privs and only the capabilities reading needs (runtime/privileges.h).
  // The CLI sets it; a test process that calls run_plan keeps its own privileges.
  bool drop_privileges = false;
  // `bpfql serve` (runtime/serve/serve.h): the Output to use instead of `format`/`output_path`
  // (not owned), and rows for export (percentile() cells as their log-linear buckets).
  Output* output = nullptr;
  bool export_rows = false;
  // `bpfql serve`: an eventfd; when it becomes readable, every aggregating query is read at once
  // (a scrape asked for fresher state than the last refresh), besides the regular intervals.
  int refresh_fd = -1;
  // Read every aggregating query once more at the end (run prints its final result). serve does
  // not: nobody scrapes after SIGTERM, and a large read must not delay a stop.
  bool final_read = true;
  // false (--no-cache): compile with libbcc even when the program cache has the Plan (loader.h).
  bool use_cache = true;
  TracedCommand* command = nullptr;  // -c (not owned)
  Reloader* reloader = nullptr;      // serve: SIGHUP reloads (not owned); else SIGHUP ends the run
  // serve --expire-after: keys of cumulative queries idle this long are deleted
  // (runtime/collect/idle_keys.h); 0 = never.
  std::chrono::nanoseconds expire_after{0};
};

// Returns the process exit status: 0 success, 1 a runtime failure (load, verify, attach), with
// a message on stderr that says what to do.
int run_plan(const Plan& plan, const RunOptions& options);

}  // namespace bpfql
