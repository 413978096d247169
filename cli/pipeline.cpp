#include "cli/pipeline.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "cli/query_paths.h"
#include "compiler/codegen/codegen.h"
#include "compiler/syntax/query.h"

namespace bpfql {
namespace {

std::string rendered(const Diagnostic& diag, const std::map<std::string, std::string>& texts,
                     std::string_view severity = "error") {
  auto it = texts.find(diag.loc.file);
  return format_diagnostic(diag, it == texts.end() ? std::string_view() : it->second, severity);
}

std::set<std::string> declared_params(const QueryFile& file) {
  std::set<std::string> names;
  for (const auto& p : file.params) names.insert(p.name);
  for (const auto& q : file.queries)
    for (const auto& p : q.params) names.insert(p.name);
  return names;
}

// Resolves and loads each file, keeping its text for caret lines.
std::vector<Result<QueryFile>> load_files(const std::vector<std::string>& files_or_names,
                                          std::map<std::string, std::string>& texts) {
  std::vector<Result<QueryFile>> files;
  for (const auto& file_or_name : files_or_names) {
    auto path = resolve_query(file_or_name);
    if (!path) {
      files.push_back(std::unexpected(path.error()));
      continue;
    }
    auto file = load_query_file(*path);
    if (file) {
      texts[file->path] = file->text;
    } else {
      // A file that failed to load is read again for the caret line.
      std::ifstream in(*path);
      texts[*path] = std::string(std::istreambuf_iterator<char>(in), {});
    }
    files.push_back(std::move(file));
  }
  return files;
}

// Code generation has rules of its own (how big a map key or an event may be): a query that
// breaks one fails `check` as it would fail `compile`. Each query is generated alone, so that
// every bad query of a file is reported and the good ones still listed.
std::optional<Diagnostic> generation_problem(CheckedQuery& query) {
  CheckedProgram alone;
  alone.queries.push_back(std::move(query));
  auto plan = generate_plan(alone);
  query = std::move(alone.queries.front());
  if (plan) return std::nullopt;
  return plan.error();
}

// check_each_file; `generate_each`: also generate each query alone (what `check` reports).
// compile_queries generates the whole program once instead, and alone only when that fails.
ProgramCheck check_files(const PipelineInput& input, const KernelCatalog& catalog,
                         bool generate_each) {
  ProgramCheck result;
  std::map<std::string, std::string>& texts = result.texts;
  // Every file is checked even after one fails, so that one run reports every file's error.
  auto failed = [&](const Diagnostic& diag) {
    std::cerr << rendered(diag, texts);
    result.failed = true;
  };
  std::vector<Result<QueryFile>> files = load_files(input.files_or_names, texts);
  // One -p applies to every file that declares it; a name no file declares is an error, said once
  // (by the first file). A file that did not load may be the one declaring it: then no error.
  bool undeclared_unsaid =
      std::ranges::all_of(files, [](const auto& file) { return file.has_value(); });
  std::set<std::string> declared;
  for (const auto& file : files)
    if (file)
      for (const auto& name : declared_params(*file)) declared.insert(name);
  std::set<std::string> names;
  for (auto& loaded : files) {  // in the order given, so the errors come in that order too
    if (!loaded) {
      failed(loaded.error());
      continue;
    }
    QueryFile& file = *loaded;
    std::map<std::string, std::string> mine;
    for (const auto& [name, value] : input.params)
      if (declared_params(file).count(name) || (undeclared_unsaid && !declared.count(name)))
        mine[name] = value;
    undeclared_unsaid = false;
    if (auto r = bind_params(file, mine); !r) {
      failed(r.error());
      continue;
    }
    auto program = check_file(file, catalog, input.options);
    if (!program) {
      failed(program.error());
      continue;
    }
    for (auto& query : program->queries) {
      if (input.require)
        if (auto problem = input.require(query)) {
          failed(*problem);
          continue;
        }
      if (input.adjust) input.adjust(query);
      if (generate_each)
        if (auto problem = generation_problem(query)) {
          failed(*problem);
          continue;
        }
      if (!names.insert(query.name).second) {
        failed(Diagnostic{query.loc, fmt::format("a query named '{}' is already loaded from "
                                                 "another file; rename one with `name:`",
                                                 query.name)});
        continue;
      }
      for (const auto& warning : query.warnings) std::cerr << rendered(warning, texts, "warning");
      if (input.show_notes)
        for (const auto& note : query.notes) std::cerr << rendered(note, texts, "note");
      result.passed.queries.push_back(std::move(query));
    }
  }
  if (input.require_of_all && !result.failed)
    for (const Diagnostic& problem : input.require_of_all(result.passed)) failed(problem);
  return result;
}

}  // namespace

ProgramCheck check_each_file(const PipelineInput& input, const KernelCatalog& catalog) {
  return check_files(input, catalog, /*generate_each=*/true);
}

std::optional<Plan> compile_queries(const PipelineInput& input, const KernelCatalog& catalog) {
  ProgramCheck checked = check_files(input, catalog, /*generate_each=*/false);
  if (checked.failed) return std::nullopt;
  auto plan = generate_plan(checked.passed);
  if (plan) return std::move(*plan);
  // As `check` would: every query's own problem, and the program's when no query alone has one.
  bool reported = false;
  for (auto& query : checked.passed.queries)
    if (auto problem = generation_problem(query)) {
      std::cerr << rendered(*problem, checked.texts);
      reported = true;
    }
  if (!reported) std::cerr << rendered(plan.error(), checked.texts);
  return std::nullopt;
}

}  // namespace bpfql
