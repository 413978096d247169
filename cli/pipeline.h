// The compiler pipeline as the commands use it: names → files → QueryFiles → checked program →
// Plan, printing any diagnostic with its source line.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/check/check.h"
#include "compiler/plan.h"

namespace bpfql {

struct PipelineInput {
  std::vector<std::string> files_or_names;  // "-" reads a YAML query from stdin
  std::optional<std::string> one_liner;      // -e: SQL-shaped statements (compiler/syntax/sql.h)
  std::map<std::string, std::string> params;  // -p name=value
  CheckOptions options;
  // A command's own rule on each checked query (serve: no streaming queries); its diagnostic is
  // reported with the source line like any other.
  std::function<std::optional<Diagnostic>(const CheckedQuery&)> require;
  // A command's rule on the queries of the whole run, once each passed (run -f folded: some
  // query has a stack to fold); its diagnostics are reported with the source line too.
  std::function<std::vector<Diagnostic>(const CheckedProgram&)> require_of_all;
  // A command's additions to each checked query before code generation (serve: histogram sums).
  std::function<void(CheckedQuery&)> adjust;
  // `check -v`: print each query's notes (CheckedQuery::notes) to stderr, as "note:" with the
  // source line.
  bool show_notes = false;
  // Diagnostics are collected in ProgramCheck::errors and not printed (check DIR, --kernel).
  bool quiet = false;
};

// The queries that passed, and whether anything failed (its diagnostics already on stderr).
struct ProgramCheck {
  CheckedProgram passed;
  bool failed = false;
  std::map<std::string, std::string> texts;  // each file's text, by path: for caret lines
  std::vector<Diagnostic> errors;            // every error, in the order reported
  // What failed, by query name; a file that failed as a whole (it does not load or check) by its
  // name without folder and .yml, unless some of its queries passed.
  std::vector<std::string> failed_queries;
  // Each passing query's code and values as generated alone, by name (serve's reload compares
  // them to tell an unchanged query from a changed one).
  std::map<std::string, std::string> fingerprints;
};

// A diagnostic as check prints it: `file:line:col: error: ...`, the line and a caret.
std::string rendered_diagnostic(const Diagnostic& diag, const ProgramCheck& check);

// Loads and checks every file, going on past a bad one: prints each file's diagnostic to stderr.
// A query passes when code generation accepts it too.
ProgramCheck check_each_file(const PipelineInput& input, const KernelCatalog& catalog);

// check_each_file, all or nothing (nullopt when anything failed), then code generation.
std::optional<Plan> compile_queries(const PipelineInput& input, const KernelCatalog& catalog);

// serve without --strict: the queries that pass, each checked and generated alone, then
// together; `failed` gets the names of the rest (their diagnostics already on stderr). nullopt
// when none passes (or the passing ones fail together).
std::optional<Plan> compile_passing_queries(const PipelineInput& input, const KernelCatalog& catalog,
                                            std::vector<std::string>& failed,
                                            std::map<std::string, std::string>* fingerprints = nullptr);

}  // namespace bpfql
