#include "cli/commands.h"

#include "cli/library_check.h"

#include <algorithm>
#include <expected>
#include <fstream>
#include <iostream>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/query_paths.h"
#include "compiler/syntax/includes.h"
#include "compiler/codegen/c_names.h"
#include "compiler/check/histogram_sums.h"
#include "compiler/syntax/print_query.h"
#include "compiler/syntax/sql.h"
#include "runtime/held_command.h"
#include "runtime/load/loader.h"
#include "runtime/kernel/probe_support.h"
#include "runtime/kernel/process_watch.h"
#include "runtime/serve/reload.h"
#include "runtime/serve/serve.h"
#include "runtime/kernel/tracefs_catalog.h"

namespace bpfql {

namespace {

// What run and serve do before loading: privileges, the --pid process, tracefs, the compiler and
// the probes this machine offers. Returns the Plan or the exit status.
std::expected<Plan, int> plan_for_kernel(const PipelineInput& input,
                                         std::vector<std::string>* failed = nullptr,
                                         std::map<std::string, std::string>* fingerprints = nullptr) {
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
  // Without tracefs, profile: and other perf-event queries still run (they need none); a
  // tracepoint fails its check ("no tracepoints are visible"), and then the run fails as a host
  // problem (exit 1) that says what to mount.
  TracefsCatalog catalog;
  auto plan = failed ? compile_passing_queries(input, catalog, *failed, fingerprints)
                     : compile_queries(input, catalog);
  if (!plan && !catalog.tracefs_problem().empty()) {
    std::cerr << "bpfql: " << catalog.tracefs_problem() << "\n";
    return std::unexpected(1);
  }
  if (!plan) return std::unexpected(2);
  if (std::string why = unavailable_probes(*plan, catalog); !why.empty()) {
    std::cerr << "bpfql: " << why << "\n";
    return std::unexpected(1);
  }
  return std::move(*plan);
}

// serve exports aggregates; a query that streams one row per event has nothing to export.
std::optional<Diagnostic> exportable(const CheckedQuery& q) {
  // Arithmetic on aggregates runs when a table is printed; Prometheus does it in PromQL
  // (rate(), division of two series), so serve exports the aggregates themselves.
  if (!q.computed.empty())
    return Diagnostic{q.loc, fmt::format("query '{}': select item '{}' is computed from aggregates "
                                         "at print time, which serve does not export; select the "
                                         "aggregates and compute in PromQL (rate(), /)",
                                         q.name, q.computed.front().name)};
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
  if (options.format == OutputFormat::Folded || options.format == OutputFormat::Svg)
    input.require_of_all = foldable;
  auto plan = plan_for_kernel(input);
  if (!plan) return plan.error();
  return run_plan(*plan, options);
}

int command_run_command(PipelineInput input, RunOptions options, const std::string& command) {
  if (auto problem = check_privileges()) {  // before anything is started
    std::cerr << "bpfql: " << *problem << "\n";
    return 1;
  }
  auto held = HeldCommand::start(command);
  if (!held) {
    std::cerr << "bpfql: " << held.error() << "\n";
    return 1;
  }
  input.options.pid = (*held)->pid();
  input.options.pid_tree = true;
  options.command = held->get();
  return command_run(std::move(input), options);
}

int command_serve(PipelineInput input, const ListenAddress& listen, const WebConfig& web,
                  size_t max_series, bool strict, RunOptions options,
                  std::vector<std::string> reload_roots) {
  input.require = exportable;
  input.adjust = add_histogram_sums;
  // Without --strict, the queries that check are served and the rest reported (here, and as
  // bpfql_query_up 0), as one bad query must not take a host's whole exporter down. Each
  // query's fingerprint tells a reload which queries did not change.
  std::vector<std::string> failed;
  std::map<std::string, std::string> fingerprints;
  auto plan = plan_for_kernel(input, &failed, &fingerprints);
  if (!plan) return plan.error();
  if (strict && !failed.empty()) {
    std::cerr << fmt::format("bpfql: --strict: not serving anything, as {} did not check (errors above)\n",
                             fmt::join(failed, ", "));
    return 2;
  }
  if (!failed.empty())
    std::cerr << fmt::format("bpfql: serving {} of {} queries; not served (errors above): {}\n",
                             plan->queries.size(), plan->queries.size() + failed.size(), fmt::join(failed, ", "));
  prepare_serve_plan(*plan, input.options.interval_ns);
  auto exporter = HttpExporter::bind(listen, web);
  if (!exporter) {
    std::cerr << "bpfql: " << exporter.error() << "\n";
    return 1;
  }
  if (reload_roots.empty())
    return serve_plan(*plan, **exporter, options, BPFQL_VERSION, max_series, failed);
  // SIGHUP: the same files and directories, read again, checked and generated as at the start;
  // any query that fails now and did not before refuses the reload (the old set keeps serving).
  auto known_failures = std::make_shared<std::vector<std::string>>(failed);
  QueryCompiler compile = [input, reload_roots, strict, known_failures]() -> std::optional<CompiledQueries> {
    PipelineInput again = input;
    again.files_or_names = reload_roots;
    if (!expand_query_dirs(again.files_or_names)) return std::nullopt;
    CompiledQueries out;
    TracefsCatalog catalog;
    auto plan = compile_passing_queries(again, catalog, out.failed, &out.fingerprints);
    if (!plan) return std::nullopt;
    if (std::string why = unavailable_probes(*plan, catalog); !why.empty()) {
      std::cerr << "bpfql: " << why << "\n";
      return std::nullopt;
    }
    std::vector<std::string> newly;
    for (const auto& f : out.failed)
      if (strict || std::ranges::find(*known_failures, f) == known_failures->end()) newly.push_back(f);
    if (newly.empty()) *known_failures = out.failed;
    out.refused = newly;
    prepare_serve_plan(*plan, again.options.interval_ns);
    out.plan = std::move(*plan);
    return out;
  };
  return serve_plan(*plan, **exporter, options, BPFQL_VERSION, max_series, failed,
                    [&](PrometheusOutput& output) {
                      return std::make_unique<ServeReloader>(compile, fingerprints, output);
                    });
}

int command_check(const PipelineInput& input) {
  TracefsCatalog catalog;
  if (!catalog.tracefs_problem().empty())
    std::cerr << "bpfql: warning: " << catalog.tracefs_problem() << "\n";
  // Every good file's queries are listed even when another file failed.
  ProgramCheck program = check_each_file(input, catalog);
  // What `run` would refuse on this machine (kprobes compiled out, no PMU) is refused here too,
  // with the same message: a query that checks "ok" must be one that can run here.
  int host_failed = 0;
  for (const auto& query : program.passed.queries) {
    Plan probes_only;
    PlanQuery& pq = probes_only.queries.emplace_back();
    pq.name = query.name;
    auto add = [&](const ProbeRef& p) {
      PlanAttach a;
      a.kind = p.kind;
      a.spec = p.spec;
      a.symbol = p.symbol;
      pq.attaches.push_back(a);
    };
    for (const auto& p : query.probes) add(p);
    if (query.span)
      for (const auto& p : query.span->begin) add(p);
    if (std::string why = unavailable_probes(probes_only, catalog); !why.empty()) {
      std::cerr << "bpfql: " << why << " (run would refuse it on this machine)\n";
      host_failed = 1;
      continue;
    }
    std::cout << check_ok_line(query) << "\n";
  }
  return program.failed ? 2 : host_failed;
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

namespace bpfql {

int command_convert(const PipelineInput& input, const std::string& to) {
  if (input.files_or_names.size() + (input.one_liner ? 1 : 0) != 1) {
    std::cerr << "bpfql: convert takes one query: -e 'SELECT ...', a file, a library name or '-'\n";
    return 2;
  }
  std::string text;
  Result<QueryFile> file = std::unexpected(Diagnostic{});
  if (input.one_liner) {
    text = *input.one_liner;
    file = load_sql_text("-e", text, input.params);
  } else if (input.files_or_names.front() == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), {});
    file = load_query_text("-", text);
  } else {
    auto path = resolve_query(input.files_or_names.front());
    if (!path) {
      std::cerr << format_diagnostic(path.error(), "");
      return 2;
    }
    std::ifstream in(*path, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
    file = load_query_text(*path, text);
  }
  if (!file) {
    std::cerr << format_diagnostic(file.error(), text);
    return 2;
  }
  // What `include:` brings is printed with the file (print_yaml), so it must be read first.
  std::map<std::string, std::string> texts{{file->path, text}};
  auto included = resolve_includes(*file, query_search_dirs());
  texts.insert(file->included_texts.begin(), file->included_texts.end());
  if (!included) {
    std::cerr << format_diagnostic(included.error(), texts);
    return 2;
  }
  bool to_yaml = to.empty() ? input.one_liner.has_value() : to == "yaml";
  auto printed = to_yaml ? print_yaml(*file) : print_sql(*file);
  if (!printed) {
    std::cerr << format_diagnostic(printed.error(), texts);
    return 2;
  }
  std::cout << *printed;
  return 0;
}

}  // namespace bpfql
