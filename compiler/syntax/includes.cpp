#include "compiler/syntax/includes.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "compiler/syntax/load_internal.h"

namespace bpfql {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kIncludeSuffix = ".inc.yml";

// Beside the including file, then in each folder above it (nearest first: a library's
// `web/opens.yml` finds the library's `shared/web.inc.yml` however it is named on the command
// line), then in each library folder; `web` means `web.inc.yml`.
std::optional<std::string> find_include(const Located& name, const std::string& from,
                                        const std::vector<std::string>& dirs) {
  std::string file = name.text;
  if (!is_include_file_name(file)) file += kIncludeSuffix;
  std::vector<fs::path> candidates;
  if (fs::path(file).is_absolute()) {
    candidates.push_back(file);
  } else {
    std::error_code ec;
    fs::path here = fs::absolute(fs::path(from), ec).parent_path();
    candidates.push_back(fs::path(from).parent_path() / file);
    for (fs::path up = here.parent_path(); !ec && !up.empty(); up = up.parent_path()) {
      candidates.push_back(up / file);
      if (up == up.root_path()) break;
    }
    for (const auto& dir : dirs) candidates.push_back(fs::path(dir) / file);
  }
  std::error_code ec;
  for (const auto& c : candidates)
    if (fs::is_regular_file(c, ec)) return c.lexically_normal().string();
  return std::nullopt;
}

struct IncludeFile {
  std::string text;
  std::vector<ParamDecl> params;
  std::map<std::string, MacroDef, std::less<>> macros;
  std::map<std::string, ListDef, std::less<>> lists;
};

Result<IncludeFile> load_include(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  IncludeFile inc;
  inc.text = buffer.str();
  load::YamlSource src(path, inc.text);
  try {
    auto root = load::parse_document(src, inc.text);
    if (!root) return std::unexpected(root.error());
    if (!root->IsMap())
      return error_at(src.node(*root), "an include file must be a mapping with 'macros:', "
                                       "'lists:' and 'params:'");
    auto entries = load::entries_of(*root, src, "include file");
    if (!entries) return std::unexpected(entries.error());
    for (const load::Entry& entry : *entries) {
      if (entry.key == "macros") {
        if (auto ok = load::read_macros(entry, src, inc.macros); !ok)
          return std::unexpected(ok.error());
      } else if (entry.key == "lists") {
        if (auto ok = load::read_lists(entry, src, inc.lists); !ok)
          return std::unexpected(ok.error());
      } else if (entry.key == "params") {
        auto params = load::param_decls(entry, src);
        if (!params) return std::unexpected(params.error());
        inc.params = std::move(*params);
      } else {
        return std::unexpected(load::unknown_key(entry, "include file", {"macros", "lists", "params"}));
      }
    }
  } catch (const std::exception& e) {
    return error_at({path, 0, 0}, fmt::format("cannot load include file: {}", e.what()));
  }
  return inc;
}

}  // namespace

bool is_include_file_name(std::string_view path) { return path.ends_with(kIncludeSuffix); }

Result<void> resolve_includes(QueryFile& file, const std::vector<std::string>& library_dirs) {
  std::vector<ParamDecl> included_params;
  std::map<std::string, SourceLoc> param_origin;
  for (const Located& name : file.includes) {
    auto path = find_include(name, file.path, library_dirs);
    if (!path)
      return error_at(name.loc, fmt::format("include file '{}' not found beside {}, in a folder "
                                            "above it, or in the library folders (BPFQL_PATH, "
                                            "/etc/bpfql/queries, the installed library)",
                                            name.text, file.path));
    if (file.included_texts.count(*path))
      return error_at(name.loc, fmt::format("'{}' is included twice", name.text));
    auto inc = load_include(*path);
    if (!inc) return std::unexpected(inc.error());
    file.included_texts[*path] = inc->text;
    for (auto& [macro_name, macro] : inc->macros) {
      if (auto first = file.macros.find(macro_name); first != file.macros.end())
        return error_at(first->second.name_loc,
                        fmt::format("macro '{}' is also defined at {}:{}:{} (included by line {})",
                                    macro_name, macro.name_loc.file, macro.name_loc.line,
                                    macro.name_loc.col, name.loc.line));
      file.macros.emplace(macro_name, std::move(macro));
    }
    for (auto& [list_name, list] : inc->lists) {
      if (auto first = file.lists.find(list_name); first != file.lists.end())
        return error_at(first->second.name_loc,
                        fmt::format("list '{}' is also defined at {}:{}:{} (included by line {})",
                                    list_name, list.name_loc.file, list.name_loc.line,
                                    list.name_loc.col, name.loc.line));
      file.lists.emplace(list_name, std::move(list));
    }
    for (ParamDecl& p : inc->params) {
      if (auto first = param_origin.find(p.name); first != param_origin.end())
        return error_at(p.loc, fmt::format("parameter '{}' is also declared at {}:{}", p.name,
                                           first->second.file, first->second.line));
      param_origin.emplace(p.name, p.loc);
      included_params.push_back(std::move(p));
    }
  }
  // The file's own declarations come after, so that they shadow an included one of that name.
  file.params.insert(file.params.begin(), std::make_move_iterator(included_params.begin()),
                     std::make_move_iterator(included_params.end()));
  return {};
}

}  // namespace bpfql
