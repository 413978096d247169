#include "cli/pipeline.h"

#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "cli/query_paths.h"
#include "compiler/codegen.h"
#include "compiler/query.h"

namespace bpfql {
namespace {

void report(const Diagnostic& diag, const std::map<std::string, std::string>& texts) {
  auto it = texts.find(diag.loc.file);
  std::cerr << format_diagnostic(diag, it == texts.end() ? std::string_view() : it->second);
}

std::set<std::string> declared_params(const QueryFile& file) {
  std::set<std::string> names;
  for (const auto& p : file.params) names.insert(p.name);
  for (const auto& q : file.queries)
    for (const auto& p : q.params) names.insert(p.name);
  return names;
}

}  // namespace

std::optional<CheckedProgram> check_queries(const PipelineInput& input, const KernelCatalog& catalog) {
  std::map<std::string, std::string> texts;
  std::vector<QueryFile> files;
  for (const auto& file_or_name : input.files_or_names) {
    auto path = resolve_query(file_or_name);
    if (!path) {
      report(path.error(), texts);
      return std::nullopt;
    }
    auto file = load_query_file(*path);
    if (!file) {
      // A file that failed to load is read again for the caret line.
      std::ifstream in(*path);
      texts[*path] = std::string(std::istreambuf_iterator<char>(in), {});
      report(file.error(), texts);
      return std::nullopt;
    }
    texts[file->path] = file->text;
    files.push_back(std::move(*file));
  }

  // One -p applies to every file that declares it; a name no file declares is an error.
  std::set<std::string> declared;
  for (const auto& file : files)
    for (const auto& name : declared_params(file)) declared.insert(name);
  for (auto& file : files) {
    std::map<std::string, std::string> mine;
    for (const auto& [name, value] : input.params)
      if (declared_params(file).count(name) || !declared.count(name)) mine[name] = value;
    if (auto r = bind_params(file, mine); !r) {
      report(r.error(), texts);
      return std::nullopt;
    }
  }

  CheckedProgram all;
  std::set<std::string> names;
  for (const auto& file : files) {
    auto program = check_file(file, catalog, input.options);
    if (!program) {
      report(program.error(), texts);
      return std::nullopt;
    }
    for (auto& query : program->queries) {
      if (input.require)
        if (auto problem = input.require(query)) {
          report(*problem, texts);
          return std::nullopt;
        }
      if (input.adjust) input.adjust(query);
      if (!names.insert(query.name).second) {
        report(Diagnostic{query.loc, fmt::format("a query named '{}' is already loaded from another "
                                                 "file; rename one with `name:`",
                                                 query.name)},
               texts);
        return std::nullopt;
      }
      all.queries.push_back(std::move(query));
    }
  }
  return all;
}

std::optional<Plan> compile_queries(const PipelineInput& input, const KernelCatalog& catalog) {
  auto program = check_queries(input, catalog);
  if (!program) return std::nullopt;
  auto plan = generate_plan(*program);
  if (!plan) {
    std::cerr << format_diagnostic(plan.error(), "");
    return std::nullopt;
  }
  return std::move(*plan);
}

}  // namespace bpfql
