// `bpfql check` over a library and a fleet: directories checked recursively with the library's
// own rules (unique names, descriptions, documented parameters with defaults), each query
// checked against one kernel (this host, or a snapshot: --kernel FILE) or several (a table of
// which query works where and why not), as text or JSON.
#pragma once

#include <string>
#include <vector>

#include "cli/pipeline.h"

namespace bpfql {

struct CheckTargets {
  std::vector<std::string> kernels;  // snapshot files; empty = the running kernel
  bool json = false;                 // -f json
};

// Whether `command_check_library` is needed: a directory among the inputs, --kernel or -f json.
bool wants_library_check(const PipelineInput& input, const CheckTargets& targets);

// Exit status: 0 every query passed on every kernel and the library rules hold, 2 otherwise
// (a snapshot that cannot be read is a usage error, 2, too).
int command_check_library(const PipelineInput& input, const CheckTargets& targets);

// The line `check` prints for a query that passed: "NAME: ok (1 probe, aggregates in the kernel)".
std::string check_ok_line(const CheckedQuery& query);

// Why the queries of FILE cannot run on the kernel `catalog` describes ("" when they can): the
// first error of check, code generation, the probe kinds it lacks, or `requires:`.
std::string why_not_runnable(const std::string& path, const KernelCatalog& catalog);

}  // namespace bpfql
