// The bpfql commands. Each returns the process exit status: 0 success, 1 a runtime failure,
// 2 a usage or query error.
#pragma once

#include <string>
#include <vector>

#include "cli/pipeline.h"
#include "runtime/session.h"

namespace bpfql {

int command_run(const PipelineInput& input, const RunOptions& options);
int command_check(const PipelineInput& input);
int command_compile(const PipelineInput& input);
// kind: "queries", "tracepoints" or "probes" (probes: PATTERN is a binary).
int command_list(const std::string& kind, const std::string& pattern, bool verbose);

}  // namespace bpfql
