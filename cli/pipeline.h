// The compiler pipeline as the commands use it: names → files → QueryFiles → checked program →
// Plan, printing any diagnostic with its source line.
#pragma once

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
};

// Loads and checks every file. Prints the diagnostic to stderr and returns nullopt on error.
std::optional<CheckedProgram> check_queries(const PipelineInput& input, const KernelCatalog& catalog);

// check_queries, then code generation.
std::optional<Plan> compile_queries(const PipelineInput& input, const KernelCatalog& catalog);

}  // namespace bpfql
