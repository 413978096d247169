// `include:` and `macros:` at the top of a query file, and include files themselves.
#include <fmt/format.h>

#include <cctype>

#include "compiler/syntax/load_internal.h"

namespace bpfql::load {
namespace {

bool valid_macro_name(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace

Result<void> read_macros(const Entry& entry, const YamlSource& src,
                         std::map<std::string, MacroDef, std::less<>>& out) {
  if (!entry.value.IsMap())
    return error_at(entry.value_loc,
                    fmt::format("'macros' must be a mapping of names to expressions, such as "
                                "{{is_web: 'comm in (\"nginx\", \"php-fpm\")'}}, not {}",
                                kind_name(entry.value)));
  auto macros = entries_of(entry.value, src, "macros");
  if (!macros) return std::unexpected(macros.error());
  for (const Entry& m : *macros) {
    if (!valid_macro_name(m.key))
      return error_at(m.key_loc, fmt::format("invalid macro name '{}': use letters, digits and "
                                             "'_', starting with a letter or '_'",
                                             m.key));
    if (!m.value.IsScalar() || m.value.Scalar().empty())
      return error_at(m.value_loc, fmt::format("macro '{}' must be an expression (text), not {}",
                                               m.key, kind_name(m.value)));
    if (auto first = out.find(m.key); first != out.end())
      return error_at(m.key_loc, fmt::format("macro '{}' is already defined at {}:{}:{}", m.key,
                                             first->second.name_loc.file,
                                             first->second.name_loc.line,
                                             first->second.name_loc.col));
    out.emplace(m.key, MacroDef{m.key, m.key_loc, src.expression_text(m.value)});
  }
  return {};
}

Result<void> take_shared_keys(YAML::Node& root, const YamlSource& src, QueryFile& file) {
  if (!root.IsMap()) return {};
  bool has_shared = false;
  for (auto it = root.begin(); it != root.end(); ++it)
    if (it->first.IsScalar() && (it->first.Scalar() == "include" || it->first.Scalar() == "macros"))
      has_shared = true;
  if (!has_shared) return {};  // the shapes' own readers report everything else
  auto entries = entries_of(root, src, "query file");
  if (!entries) return std::unexpected(entries.error());
  for (const Entry& entry : *entries) {
    if (entry.key == "include") {
      auto names = text_list(entry, src, "an include file or a list of them", /*strings=*/false);
      if (!names) return std::unexpected(names.error());
      file.includes = std::move(*names);
    } else if (entry.key == "macros") {
      if (auto ok = read_macros(entry, src, file.macros); !ok) return ok;
    }
  }
  root.remove("include");
  root.remove("macros");
  return {};
}

}  // namespace bpfql::load
