#include "cli/pipeline.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "cli/query_paths.h"
#include "compiler/codegen/codegen.h"
#include "compiler/syntax/includes.h"
#include "compiler/syntax/query.h"
#include "compiler/syntax/sql.h"

namespace bpfql {
namespace {

std::string rendered(const Diagnostic& diag, const std::map<std::string, std::string>& texts,
                     std::string_view severity = "error") {
  return format_diagnostic(diag, texts, severity);
}

std::set<std::string> declared_params(const QueryFile& file) {
  std::set<std::string> names;
  for (const auto& p : file.params) names.insert(p.name);
  for (const auto& q : file.queries)
    for (const auto& p : q.params) names.insert(p.name);
  return names;
}

// A query from a stream (`-` for stdin, a FIFO, /dev/stdin), read once: a failed load cannot
// read it again for the caret line, so the text is kept either way.
Result<QueryFile> load_stream(std::istream& in, const std::string& name,
                              std::map<std::string, std::string>& texts) {
  constexpr size_t kMaxBytes = 16 << 20;
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxBytes)
      return error_at({name, 0, 0}, "holds more than 16 MiB: not a query file");
  }
  texts[name] = text;
  return load_query_text(name, text);
}

// Resolves and loads each file (and the -e one-liner first), keeping its text for caret lines.
std::vector<Result<QueryFile>> load_files(const PipelineInput& input,
                                          std::map<std::string, std::string>& texts) {
  std::vector<Result<QueryFile>> files;
  if (input.one_liner) {
    texts["-e"] = *input.one_liner;
    files.push_back(load_sql_text("-e", *input.one_liner, input.params));
  }
  bool stdin_read = false;
  for (const auto& file_or_name : input.files_or_names) {
    if (file_or_name == "-") {
      if (stdin_read) {
        files.push_back(error_at({"-", 0, 0}, "stdin ('-') is given twice; it holds one file"));
        continue;
      }
      stdin_read = true;
      files.push_back(load_stream(std::cin, "-", texts));
      continue;
    }
    auto path = resolve_query(file_or_name);
    if (!path) {
      files.push_back(std::unexpected(path.error()));
      continue;
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*path, ec)) {  // a FIFO or /dev/stdin
      std::ifstream in(*path, std::ios::binary);
      files.push_back(load_stream(in, *path, texts));
      continue;
    }
    auto file = load_query_file(*path);
    if (file) {
      texts[file->path] = file->text;
      auto included = resolve_includes(*file, query_search_dirs());
      for (const auto& [include_path, text] : file->included_texts) texts[include_path] = text;
      if (!included) {
        files.push_back(std::unexpected(included.error()));
        continue;
      }
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
std::optional<Diagnostic> generation_problem(CheckedQuery& query, std::string* fingerprint = nullptr) {
  CheckedProgram alone;
  alone.queries.push_back(std::move(query));
  auto plan = generate_plan(alone);
  query = std::move(alone.queries.front());
  if (plan) {
    if (fingerprint) {
      *fingerprint = plan->c_source;
      for (const auto& c : plan->constants) *fingerprint += fmt::format("\n// {} = {}", c.source, c.value);
    }
    return std::nullopt;
  }
  return plan.error();
}

// check_each_file; `generate_each`: also generate each query alone (what `check` reports).
// compile_queries generates the whole program once instead, and alone only when that fails.
ProgramCheck check_files(const PipelineInput& input, const KernelCatalog& catalog,
                         bool generate_each) {
  ProgramCheck result;
  std::map<std::string, std::string>& texts = result.texts;
  // Every file is checked even after one fails, so that one run reports every file's error.
  std::set<std::string> failed_files;
  auto failed = [&](const Diagnostic& diag) {
    if (!input.quiet) std::cerr << rendered(diag, texts);
    result.errors.push_back(diag);
    result.failed = true;
    failed_files.insert(diag.loc.file);
  };
  auto query_failed = [&](const Diagnostic& diag, const std::string& name) {
    std::cerr << rendered(diag, texts);
    result.failed = true;
    result.failed_queries.push_back(name);
  };
  std::vector<Result<QueryFile>> files = load_files(input, texts);
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
          query_failed(*problem, query.name);
          continue;
        }
      if (input.adjust) input.adjust(query);
      std::string fingerprint;
      if (generate_each)
        if (auto problem = generation_problem(query, &fingerprint)) {
          query_failed(*problem, query.name);
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
      if (generate_each) result.fingerprints[query.name] = std::move(fingerprint);
      result.passed.queries.push_back(std::move(query));
    }
  }
  if (input.require_of_all && !result.failed)
    for (const Diagnostic& problem : input.require_of_all(result.passed)) failed(problem);
  for (const auto& file : failed_files) {
    bool some_passed = std::ranges::any_of(result.passed.queries, [&](const CheckedQuery& q) { return q.loc.file == file; });
    if (!some_passed) result.failed_queries.push_back(std::filesystem::path(file).stem().string());
  }
  return result;
}

}  // namespace

std::string rendered_diagnostic(const Diagnostic& diag, const ProgramCheck& check) {
  return rendered(diag, check.texts);
}

ProgramCheck check_each_file(const PipelineInput& input, const KernelCatalog& catalog) {
  return check_files(input, catalog, /*generate_each=*/true);
}

std::optional<Plan> compile_passing_queries(const PipelineInput& input, const KernelCatalog& catalog,
                                            std::vector<std::string>& failed,
                                            std::map<std::string, std::string>* fingerprints) {
  ProgramCheck checked = check_files(input, catalog, /*generate_each=*/true);
  failed = checked.failed_queries;
  if (fingerprints) *fingerprints = checked.fingerprints;
  if (checked.passed.queries.empty()) return std::nullopt;
  auto plan = generate_plan(checked.passed);
  if (!plan) {
    std::cerr << rendered(plan.error(), checked.texts);
    return std::nullopt;
  }
  return std::move(*plan);
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
