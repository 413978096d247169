// `include:`, `macros:` and `lists:` at the top of a query file, and include files themselves.
#include <fmt/format.h>

#include <cctype>
#include <optional>

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

Result<void> read_lists(const Entry& entry, const YamlSource& src,
                        std::map<std::string, ListDef, std::less<>>& out) {
  if (!entry.value.IsMap())
    return error_at(entry.value_loc,
                    fmt::format("'lists' must be a mapping of names to lists of values, such as "
                                "{{web_servers: [nginx, php-fpm]}}, not {}",
                                kind_name(entry.value)));
  auto lists = entries_of(entry.value, src, "lists");
  if (!lists) return std::unexpected(lists.error());
  for (const Entry& l : *lists) {
    if (!valid_macro_name(l.key))
      return error_at(l.key_loc, fmt::format("invalid list name '{}': use letters, digits and "
                                             "'_', starting with a letter or '_'",
                                             l.key));
    if (!l.value.IsSequence())
      return error_at(l.value_loc, fmt::format("list '{}' must be a list of values, such as "
                                               "[nginx, php-fpm], not {}",
                                               l.key, kind_name(l.value)));
    if (l.value.size() == 0) return error_at(l.value_loc, fmt::format("list '{}' is empty", l.key));
    if (l.value.size() > kMaxListValues)
      return error_at(src.node(l.value[kMaxListValues]),
                      fmt::format("list '{}' has more than {} values (each is one comparison in "
                                  "the kernel program); split it",
                                  l.key, kMaxListValues));
    if (auto first = out.find(l.key); first != out.end())
      return error_at(l.key_loc, fmt::format("list '{}' is already defined at {}:{}:{}", l.key,
                                             first->second.name_loc.file,
                                             first->second.name_loc.line,
                                             first->second.name_loc.col));
    ListDef def{l.key, l.key_loc, true, {}};
    std::optional<Located> first_number, first_string;
    for (const YAML::Node& item : l.value) {
      if (!item.IsScalar())
        return error_at(item.IsNull() ? l.value_loc : src.node(item),
                        fmt::format("the values of list '{}' must be strings or numbers, not {}",
                                    l.key, kind_name(item)));
      // A plain (unquoted) integer is a number; anything else, and a quoted "80", a string.
      bool number = item.Tag() != "!" && parse_int64(item.Scalar()).has_value();
      Located value{item.Scalar(), src.node(item)};
      (number ? first_number : first_string) = (number ? first_number : first_string).value_or(value);
      def.values.push_back(std::move(value));
    }
    if (first_number && first_string) {
      const Located& later = first_number->loc.line > first_string->loc.line ||
                                     (first_number->loc.line == first_string->loc.line &&
                                      first_number->loc.col > first_string->loc.col)
                                 ? *first_number
                                 : *first_string;
      return error_at(later.loc, fmt::format("list '{}' mixes strings and numbers ('{}' and "
                                             "'{}'): its values must be all of one type (quote "
                                             "a number to make it a string)",
                                             l.key, first_string->text, first_number->text));
    }
    def.strings = !first_number.has_value();
    out.emplace(l.key, std::move(def));
  }
  return {};
}

Result<void> take_shared_keys(YAML::Node& root, const YamlSource& src, QueryFile& file) {
  if (!root.IsMap()) return {};
  bool has_shared = false;
  for (auto it = root.begin(); it != root.end(); ++it)
    if (it->first.IsScalar() && (it->first.Scalar() == "include" || it->first.Scalar() == "macros" ||
                                 it->first.Scalar() == "lists"))
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
    } else if (entry.key == "lists") {
      if (auto ok = read_lists(entry, src, file.lists); !ok) return ok;
    }
  }
  root.remove("include");
  root.remove("macros");
  root.remove("lists");
  return {};
}

}  // namespace bpfql::load
