// Runs a Plan: load and attach through libbcc, print every interval, stream events, and on
// Ctrl-C / SIGTERM / stop_after print the final result, detach, and return.
#pragma once

#include <string>

#include "compiler/plan.h"
#include "runtime/collect/output.h"

namespace bpfql {

struct RunOptions {
  OutputFormat format = OutputFormat::Table;
  std::string output_path;  // "" = stdout
  bool verbose = false;     // -v: verifier log and libbcc's compiler messages
  // After attach: no_new_privs and only the capabilities reading needs (runtime/privileges.h).
  // The CLI sets it; a test process that calls run_plan keeps its own privileges.
  bool drop_privileges = false;
  // `bpfql serve` (runtime/serve/serve.h): the Output to use instead of `format`/`output_path`
  // (not owned), and rows for export (percentile() cells as their log-linear buckets).
  Output* output = nullptr;
  bool export_rows = false;
  // false (--no-cache): compile with libbcc even when the program cache has the Plan (loader.h).
  bool use_cache = true;
};

// Returns the process exit status: 0 success, 1 a runtime failure (load, verify, attach), with
// a message on stderr that says what to do.
int run_plan(const Plan& plan, const RunOptions& options);

}  // namespace bpfql
