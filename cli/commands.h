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
int command_serve(PipelineInput input, const ListenAddress& listen, const WebConfig& web,
                  size_t max_series, bool strict, const RunOptions& options);
int command_check(const PipelineInput& input);
// Prints the BCC C, or with `plain` the plain C (plan.h), of the query file.
int command_compile(const PipelineInput& input, bool plain = false);
// kind: "queries", "tracepoints" or "probes" (probes: PATTERN is a binary); "" or any other
// word alone lists queries, the word being the pattern. A pattern matching nothing is noted on
// stderr, with exit 0.
int command_list(const std::string& kind, const std::string& pattern, bool verbose);

}  // namespace bpfql
