#include "cli/library_rules.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "cli/query_paths.h"
#include "compiler/syntax/query.h"
#include "compiler/syntax/includes.h"

namespace bpfql {
namespace {

namespace fs = std::filesystem;

void add_directory(const fs::path& dir, std::vector<LibraryFile>& out) {
  std::vector<LibraryFile> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file() || it->path().extension() != ".yml") continue;
    if (is_include_file_name(it->path().string())) continue;  // shared pieces, not queries
    found.push_back({fs::relative(it->path(), dir).replace_extension().string(), it->path().string()});
  }
  std::ranges::sort(found, {}, &LibraryFile::name);
  out.insert(out.end(), found.begin(), found.end());
}

void param_problems(const std::vector<ParamDecl>& params, std::vector<Diagnostic>& out) {
  for (const ParamDecl& p : params) {
    if (!p.default_value)
      out.push_back({p.loc, fmt::format("parameter '{}' has no default: a library query must run "
                                        "without -p (add `default:`)",
                                        p.name)});
    if (p.doc.empty())
      out.push_back({p.loc, fmt::format("parameter '{}' has no doc: say what it changes (add "
                                        "`doc:`)",
                                        p.name)});
  }
}

}  // namespace

Result<LibraryFiles> library_files(const std::vector<std::string>& files_or_dirs) {
  LibraryFiles result;
  for (const std::string& arg : files_or_dirs) {
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      result.is_library = true;
      size_t before = result.files.size();
      add_directory(arg, result.files);
      if (result.files.size() == before)
        return error_at({arg, 0, 0}, "no query files (*.yml) in this folder or below it");
      continue;
    }
    auto path = resolve_query(arg);
    if (!path) return std::unexpected(path.error());
    result.files.push_back({arg, *path});
  }
  return result;
}

std::vector<Diagnostic> library_rule_problems(const std::vector<LibraryFile>& files) {
  std::vector<Diagnostic> problems;
  std::map<std::string, SourceLoc> query_names;
  std::map<std::string, std::string> library_names;
  for (const LibraryFile& f : files) {
    if (auto [it, fresh] = library_names.emplace(f.name, f.path); !fresh)
      problems.push_back({{f.path, 0, 0}, fmt::format("library name '{}' is also {}: the first "
                                                      "folder would hide the other",
                                                      f.name, it->second)});
    auto file = load_query_file(f.path);
    if (!file) continue;  // check reports it
    param_problems(file->params, problems);
    for (const QuerySpec& q : file->queries) {
      if (q.description.empty())
        problems.push_back({q.loc, fmt::format("query '{}' has no description: say what it "
                                               "answers (add `description:`)",
                                               q.name)});
      param_problems(q.params, problems);
      if (auto [it, fresh] = query_names.emplace(q.name, q.loc); !fresh)
        problems.push_back({q.loc, fmt::format("query name '{}' is also used at {}:{}: outputs "
                                               "and metrics are keyed by it; rename one",
                                               q.name, it->second.file, it->second.line)});
    }
  }
  return problems;
}

std::string render_library_problem(const Diagnostic& problem) {
  std::ifstream in(problem.loc.file);
  std::stringstream text;
  text << in.rdbuf();
  return format_diagnostic(problem, text.str());
}

}  // namespace bpfql
