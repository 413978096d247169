#include "compiler/check/shared_names.h"

#include <fmt/format.h>

#include "compiler/syntax/parser.h"

namespace bpfql {

Diagnostic in_definition(Diagnostic inner, const SourceLoc& use, std::string_view kind,
                         const std::string& name) {
  Diagnostic outer{use, std::move(inner.message)};
  outer.notes.push_back({std::move(inner.loc), fmt::format("in the definition of {} '{}'", kind, name)});
  for (DiagnosticNote& note : inner.notes) outer.notes.push_back(std::move(note));
  return outer;
}

Result<const ListDef*> find_list(const InList& in,
                                 const std::map<std::string, ListDef, std::less<>>* lists,
                                 const std::map<std::string, MacroDef, std::less<>>* macros) {
  if (lists)
    if (auto it = lists->find(in.list); it != lists->end()) return &it->second;
  if (macros)
    if (auto macro = macros->find(in.list); macro != macros->end())
      return std::unexpected(Diagnostic{
          in.list_loc,
          fmt::format("'{}' is a macro, not a list: `in` takes a list defined under 'lists:' or "
                      "values in parentheses",
                      in.list),
          {{macro->second.name_loc, fmt::format("macro '{}' is defined here", in.list)}}});
  std::vector<std::string> names;
  if (lists)
    for (const auto& [name, list] : *lists) names.push_back(name);
  std::string hint = did_you_mean(in.list, names);
  if (hint.empty() && names.empty())
    hint = " (define it under 'lists:', in this file or in a file it includes)";
  return error_at(in.list_loc, fmt::format("unknown list '{}'", in.list) + hint);
}

Result<void> check_list_type(const InList& in, const ListDef& list, const Type& value_type) {
  const auto* builtin = in.value->as<BuiltinRef>();
  bool probe_names = builtin && builtin->which == Builtin::Probe;  // `probe in names`: strings
  bool mismatch = (value_type.is_string() && !list.strings) ||
                  (value_type.is_integer() && list.strings && !probe_names);
  if (!mismatch) return {};
  return std::unexpected(Diagnostic{
      in.list_loc,
      fmt::format("list '{}' holds {}, but '{}' is a {}", list.name,
                  list.strings ? "strings" : "numbers", in.value->text, value_type.describe()),
      {{list.name_loc, fmt::format("list '{}' is defined here", list.name)}}});
}

Result<void> fill_list_items(InList& in, const ListDef& list) {
  in.items.clear();
  for (const Located& value : list.values) {
    ExprPtr item;
    if (list.strings) {
      item = std::make_unique<Expr>();
      item->node = StringLiteral{value.text};
      item->loc = value.loc;
      item->text = fmt::format("\"{}\"", value.text);
    } else {
      auto parsed = parse_expression(value.text, value.loc);  // 80, -1, 0x50
      if (!parsed)
        return std::unexpected(in_definition(parsed.error(), in.list_loc, "list", list.name));
      item = std::move(*parsed);
    }
    in.items.push_back(std::move(item));
  }
  return {};
}

}  // namespace bpfql
