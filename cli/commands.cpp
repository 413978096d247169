#include "cli/commands.h"

#include <algorithm>
#include <expected>
#include <iostream>

#include <fmt/format.h>

#include "compiler/codegen/c_names.h"
#include "compiler/check/histogram_sums.h"
#include "runtime/load/loader.h"
#include "runtime/kernel/probe_support.h"
#include "runtime/kernel/process_watch.h"
#include "runtime/serve/serve.h"
#include "runtime/kernel/tracefs_catalog.h"

namespace bpfql {

namespace {

// What run and serve do before loading: privileges, the --pid process, tracefs, the compiler and
// the probes this machine offers. Returns the Plan or the exit status.
std::expected<Plan, int> plan_for_kernel(const PipelineInput& input) {
  // Before the catalog, whose "permission denied reading tracefs" would hide the real reason.
  if (auto problem = check_privileges()) {
    std::cerr << "bpfql: " << *problem << "\n";
    return std::unexpected(1);
  }
  if (input.options.pid)
    if (std::string missing = missing_process(*input.options.pid); !missing.empty()) {
      std::cerr << "bpfql: " << missing << "\n";
      return std::unexpected(1);
    }
  TracefsCatalog catalog;
  if (!catalog.tracefs_problem().empty()) {
    std::cerr << "bpfql: " << catalog.tracefs_problem() << "\n";
    return std::unexpected(1);
  }
  auto plan = compile_queries(input, catalog);
  if (!plan) return std::unexpected(2);
  if (std::string why = unavailable_probes(*plan, catalog); !why.empty()) {
    std::cerr << "bpfql: " << why << "\n";
    return std::unexpected(1);
  }
  return std::move(*plan);
}

// serve exports aggregates; a query that streams one row per event has nothing to export.
std::optional<Diagnostic> exportable(const CheckedQuery& q) {
  if (!q.streaming()) return std::nullopt;
  return Diagnostic{q.stream.front().loc,
                    fmt::format("query '{}' streams one row per event (its select has no "
                                "aggregate), which serve cannot export as metrics; use `bpfql run` "
                                "for it, or aggregate it (count(), sum(E), hist(E) with group_by)",
                                q.name)};
}

// -f folded prints stacks for flame graphs: a run with no kstack or ustack anywhere would print
// nothing useful, so each query is an error then. When one query has a stack, the others are
// only noted (runtime/render/folded.cpp).
std::vector<Diagnostic> foldable(const CheckedProgram& program) {
  auto is_stack = [](const auto& item) { return item.expr->type.kind == TypeKind::Stack; };
  auto stack_of = [&](const CheckedQuery& q) {
    return std::ranges::any_of(q.keys, is_stack) || std::ranges::any_of(q.stream, is_stack);
  };
  if (std::ranges::any_of(program.queries, stack_of)) return {};
  std::vector<Diagnostic> problems;
  for (const CheckedQuery& q : program.queries) {
    // At the group_by, else at the select: where a stack would go.
    SourceLoc at = !q.keys.empty()         ? q.keys.front().loc
                   : q.streaming()         ? q.stream.front().loc
                   : !q.aggregates.empty() ? q.aggregates.front().loc
                                           : q.loc;
    problems.push_back(Diagnostic{
        at, fmt::format("-f folded prints stacks for flame graphs: query '{}' needs kstack or "
                        "ustack in {} (or use -f table, json or csv)",
                        q.name, q.streaming() ? "select" : "group_by")});
  }
  return problems;
}

}  // namespace

int command_run(PipelineInput input, const RunOptions& options) {
  if (options.format == OutputFormat::Folded) input.require_of_all = foldable;
  auto plan = plan_for_kernel(input);
  if (!plan) return plan.error();
  return run_plan(*plan, options);
}

int command_serve(PipelineInput input, const ListenAddress& listen, const RunOptions& options) {
  input.require = exportable;
  input.adjust = add_histogram_sums;
  auto plan = plan_for_kernel(input);
  if (!plan) return plan.error();
  prepare_serve_plan(*plan);
  auto exporter = HttpExporter::bind(listen);
  if (!exporter) {
    std::cerr << "bpfql: " << exporter.error() << "\n";
    return 1;
  }
  return serve_plan(*plan, **exporter, options);
}

int command_check(const PipelineInput& input) {
  TracefsCatalog catalog;
  if (!catalog.tracefs_problem().empty())
    std::cerr << "bpfql: warning: " << catalog.tracefs_problem() << "\n";
  // Every good file's queries are listed even when another file failed.
  ProgramCheck program = check_each_file(input, catalog);
  for (const auto& query : program.passed.queries) {
    // A span attaches its begin probes as well as its end probes.
    size_t probes = query.probes.size() + (query.span ? query.span->begin.size() : 0);
    std::cout << fmt::format("{}: ok ({} probe{}{}, {})\n", query.name, probes,
                             probes == 1 ? "" : "s", query.span ? ": a span" : "",
                             query.streaming() ? "streams events" : "aggregates in the kernel");
  }
  return program.failed ? 2 : 0;
}

int command_compile(const PipelineInput& input, bool plain) {
  TracefsCatalog catalog;
  if (!catalog.tracefs_problem().empty())
    std::cerr << "bpfql: warning: " << catalog.tracefs_problem() << "\n";
  auto plan = compile_queries(input, catalog);
  if (!plan) return 2;
  if (plain && plan->c_plain.empty()) {
    std::cerr << "bpfql: this program is compiled by libbcc (it uses USDT, a uprobe, a kprobe or "
                 "a span keyed by thread): its C is BCC's\n";
    plain = false;
  }
  std::cout << (plain ? plan->c_plain : plan->c_source);
  if (!plan->constants.empty()) {
    std::cout << "\n/* Run-time constants (the loader writes each into its BPFQL_CONST):\n";
    for (size_t i = 0; i < plan->constants.size(); ++i)
      std::cout << fmt::format(" *   {:#x} = {} ({})\n", kRuntimeConstantMagic | i,
                               plan->constants[i].value,
                               c_names::comment_text(plan->constants[i].source));
    std::cout << " */\n";
  }
  return 0;
}

}  // namespace bpfql
