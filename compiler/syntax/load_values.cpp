// Readers for the shapes of values a query file's keys take: a mapping's entries in source
// order, a scalar, a scalar or list of them, a select/group_by item list. Moved out of
// load_source.cpp.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/syntax/lexer.h"
#include "compiler/syntax/load_internal.h"
#include "compiler/syntax/parser.h"

namespace bpfql::load {

std::string kind_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a scalar";
    default:
      return "nothing";
  }
}

Result<std::vector<Entry>> entries_of(const YAML::Node& map, const YamlSource& src,
                                      std::string_view where) {
  std::vector<Entry> entries;
  std::map<std::string, SourceLoc> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    // A copy: `it->first` lives in a proxy that dies with the full-expression.
    const YAML::Node key = it->first;
    if (!key.IsScalar())
      return error_at(src.node(key),
                      fmt::format("keys in {} must be plain words, not {}", where, kind_name(key)));
    Entry entry{key.Scalar(), src.text_of(key), it->second, {}};
    if (auto first = seen.find(entry.key); first != seen.end())
      return error_at(entry.key_loc,
                      fmt::format("duplicate key '{}' in {} (first given at line {})", entry.key,
                                  where, first->second.line));
    seen.emplace(entry.key, entry.key_loc);
    const YAML::Node& value = entry.value;
    entry.value_loc = value.IsNull()     ? entry.key_loc
                      : value.IsScalar() ? src.text_of(value)
                                         : src.node(value);
    entries.push_back(std::move(entry));
  }
  return entries;
}

Diagnostic unknown_key(const Entry& entry, std::string_view where,
                       const std::vector<std::string>& allowed) {
  return Diagnostic{entry.key_loc, fmt::format("unknown key '{}' in {}{}", entry.key, where,
                                               did_you_mean(entry.key, allowed))};
}

namespace {

bool blank(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// yaml-cpp splits `[count(), lhist(x, 0, 100, 10)]` at every comma; an item with more `(` than
// `)` (outside quotes) is the sign of it.
bool has_unclosed_paren(std::string_view text) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      --depth;
    }
  }
  return depth > 0;
}

}  // namespace

Result<Located> scalar(const Entry& entry, std::string_view expected) {
  if (!entry.value.IsScalar())
    return error_at(entry.value_loc, fmt::format("'{}' must be {}, not {}", entry.key, expected,
                                                 kind_name(entry.value)));
  return Located{entry.value.Scalar(), entry.value_loc};
}

namespace {

// ", " and the line breaks and spaces that put a text starting at `next` where it stands in the
// file, when appended to `text` (the parser counts positions from `text.loc`).
std::string separator(const Located& text, const SourceLoc& next) {
  SourceLoc end = SourceMap(text.text, text.loc).loc(text.text.size());
  if (next.line < end.line || (next.line == end.line && next.col <= end.col + 1)) return ", ";
  if (next.line == end.line)
    return "," + std::string(static_cast<size_t>(next.col - end.col - 1), ' ');
  return "," + std::string(static_cast<size_t>(next.line - end.line), '\n') +
         std::string(static_cast<size_t>(std::max(0, next.col - 1)), ' ');
}

// The scalars of a YAML list, each with its own position.
Result<std::vector<Located>> sequence_items(const Entry& entry, const YamlSource& src,
                                            bool strings) {
  std::vector<Located> items;
  bool flow = src.is_flow_sequence(entry.value);
  int n = 0;
  for (const YAML::Node& item : entry.value) {
    ++n;
    // A null item has no reliable mark of its own: point at the list.
    if (item.IsNull())
      return error_at(entry.value_loc, fmt::format("item {} of '{}' is empty", n, entry.key));
    if (!item.IsScalar())
      return error_at(src.node(item), fmt::format("items of '{}' must be text, not {}", entry.key,
                                                  kind_name(item)));
    Located located = src.expression_text(item, strings);
    if (blank(located.text))
      return error_at(located.loc, fmt::format("item {} of '{}' is empty", n, entry.key));
    // YAML splits `[comm, lhist(x, 0, 100, 10)]` at every comma: join the pieces of a call again.
    if (flow && !items.empty() && has_unclosed_paren(items.back().text)) {
      items.back().text += separator(items.back(), located.loc);
      items.back().text += located.text;
      continue;
    }
    items.push_back(std::move(located));
  }
  if (flow && !items.empty() && has_unclosed_paren(items.back().text))
    return error_at(items.back().loc, fmt::format("item '{}' of '{}' has an unclosed '('",
                                                  items.back().text, entry.key));
  return items;
}

Result<void> expect_list_or_scalar(const Entry& entry, std::string_view expected) {
  if (entry.value.IsScalar() || entry.value.IsSequence()) return {};
  return error_at(entry.value_loc, fmt::format("'{}' must be {}, not {}", entry.key, expected,
                                               kind_name(entry.value)));
}

}  // namespace

Result<std::vector<Located>> text_list(const Entry& entry, const YamlSource& src,
                                       std::string_view expected, bool strings) {
  if (auto ok = expect_list_or_scalar(entry, expected); !ok) return std::unexpected(ok.error());
  if (entry.value.IsSequence()) return sequence_items(entry, src, strings);
  if (blank(entry.value.Scalar()))
    return error_at(entry.value_loc, fmt::format("'{}' is empty", entry.key));
  return std::vector<Located>{src.expression_text(entry.value, strings)};
}

Result<std::vector<Located>> item_list(const Entry& entry, const YamlSource& src) {
  auto ok = expect_list_or_scalar(entry, "a comma-separated list of expressions, or a YAML list");
  if (!ok) return std::unexpected(ok.error());
  if (entry.value.IsSequence()) return sequence_items(entry, src, true);
  std::vector<Located> items;
  Located text = src.expression_text(entry.value);
  for (TextPiece& piece : split_top_level(text.text, text.loc)) {
    if (blank(piece.text)) return error_at(piece.loc, fmt::format("empty item in '{}'", entry.key));
    items.push_back({std::move(piece.text), piece.loc});
  }
  if (items.empty()) return error_at(entry.value_loc, fmt::format("'{}' is empty", entry.key));
  return items;
}

}  // namespace bpfql::load
