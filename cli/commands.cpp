#include "cli/commands.h"

#include <iostream>

#include <fmt/format.h>

#include "runtime/loader.h"
#include "runtime/probe_support.h"
#include "runtime/process_watch.h"
#include "runtime/tracefs_catalog.h"

namespace bpfql {

int command_run(const PipelineInput& input, const RunOptions& options) {
  // Before the catalog, whose "permission denied reading tracefs" would hide the real reason.
  if (auto problem = check_privileges()) {
    std::cerr << "bpfql: " << *problem << "\n";
    return 1;
  }
  if (input.options.pid)
    if (std::string missing = missing_process(*input.options.pid); !missing.empty()) {
      std::cerr << "bpfql: " << missing << "\n";
      return 1;
    }
  TracefsCatalog catalog;
  if (!catalog.tracefs_problem().empty()) {
    std::cerr << "bpfql: " << catalog.tracefs_problem() << "\n";
    return 1;
  }
  auto plan = compile_queries(input, catalog);
  if (!plan) return 2;
  if (std::string why = unavailable_probes(*plan, catalog); !why.empty()) {
    std::cerr << "bpfql: " << why << "\n";
    return 1;
  }
  return run_plan(*plan, options);
}

int command_check(const PipelineInput& input) {
  TracefsCatalog catalog;
  if (!catalog.tracefs_problem().empty())
    std::cerr << "bpfql: warning: " << catalog.tracefs_problem() << "\n";
  auto program = check_queries(input, catalog);
  if (!program) return 2;
  for (const auto& query : program->queries)
    std::cout << fmt::format("{}: ok ({} probe{}, {})\n", query.name, query.probes.size(),
                             query.probes.size() == 1 ? "" : "s",
                             query.streaming() ? "streams events" : "aggregates in the kernel");
  return 0;
}

int command_compile(const PipelineInput& input) {
  TracefsCatalog catalog;
  if (!catalog.tracefs_problem().empty())
    std::cerr << "bpfql: warning: " << catalog.tracefs_problem() << "\n";
  auto plan = compile_queries(input, catalog);
  if (!plan) return 2;
  std::cout << plan->c_source;
  return 0;
}

}  // namespace bpfql
