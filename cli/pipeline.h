// The compiler pipeline as the commands use it: names → files → QueryFiles → checked program →
// Plan, printing any diagnostic with its source line.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/check.h"
#include "compiler/plan.h"

namespace bpfql {

struct PipelineInput {
  std::vector<std::string> files_or_names;
  std::map<std::string, std::string> params;  // -p name=value
  CheckOptions options;
  // A command's own rule on each checked query (serve: no streaming queries); its diagnostic is
  // reported with the source line like any other.
  std::function<std::optional<Diagnostic>(const CheckedQuery&)> require;
  // A command's additions to each checked query before code generation (serve: histogram sums).
  std::function<void(CheckedQuery&)> adjust;
};

// Loads and checks every file. Prints the diagnostic to stderr and returns nullopt on error.
std::optional<CheckedProgram> check_queries(const PipelineInput& input, const KernelCatalog& catalog);

// check_queries, then code generation.
std::optional<Plan> compile_queries(const PipelineInput& input, const KernelCatalog& catalog);

}  // namespace bpfql
