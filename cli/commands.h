// The bpfql commands. Each returns the process exit status: 0 success, 1 a runtime failure,
// 2 a usage or query error.
#pragma once

#include <string>
#include <vector>

#include "cli/pipeline.h"
#include "runtime/render/prometheus.h"
#include "runtime/serve/http_exporter.h"
#include "runtime/session.h"

namespace bpfql {

// With -f folded, a run where no query has a kstack or ustack to fold is a query error (2).
int command_run(PipelineInput input, const RunOptions& options);
// Runs the queries as a Prometheus exporter on `listen` (runtime/serve/serve.h); a streaming
// query is a query error (2), an address it cannot listen on a runtime failure (1).
// `run -c CMD`: starts CMD held before its first instruction, runs the queries on it and every
// process it starts, and ends with the final print when it exits. 0 unless bpfql failed (the
// command's own status is printed); a command that cannot be started is a runtime failure (1).
int command_run_command(PipelineInput input, RunOptions options, const std::string& command);
// `reload_roots`: the files and directories as given; SIGHUP reads them again
// (runtime/serve/reload.h). Empty: SIGHUP ends serve.
int command_serve(PipelineInput input, const ListenAddress& listen, const WebConfig& web,
                  size_t max_series, bool strict, RunOptions options,
                  std::vector<std::string> reload_roots = {});
int command_check(const PipelineInput& input);
// `convert`: -e's SQL as YAML, a YAML file (or stdin) as SQL; `to` ("yaml", "sql" or "" for
// the other syntax) forces the output syntax.
int command_convert(const PipelineInput& input, const std::string& to);
// Prints the BCC C, or with `plain` the plain C (plan.h), of the query file.
int command_compile(const PipelineInput& input, bool plain = false);
// kind: "queries", "tracepoints" or "probes" (probes: PATTERN is a binary); "" or any other
// word alone lists queries, the word being the pattern. Queries show their parameters and, when
// tracefs is readable, why one cannot run here. A pattern matching nothing is noted on stderr:
// exit 0 for queries, 1 for tracepoints.
int command_list(const std::string& kind, const std::string& pattern, bool verbose);
// One query's description, parameters, probes, outputs, whether this host can run it, its text.
int command_describe(const std::string& name);
// This kernel as a snapshot (`check --kernel`); with `for_queries`, only what they need.
// `output` "" or "-": stdout.
int command_kernel_export(const std::vector<std::string>& for_queries, const std::string& output);

}  // namespace bpfql
