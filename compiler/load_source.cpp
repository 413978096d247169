// Positions of YAML nodes in the query file, and readers for the shapes of values keys take.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "compiler/load_internal.h"
#include "compiler/parser.h"

namespace bpfql::load {

YamlSource::YamlSource(std::string path, std::string_view text)
    : path_(std::move(path)), text_(text) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

SourceLoc YamlSource::at_offset(size_t offset) const {
  offset = std::min(offset, text_.size());
  auto next = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  size_t line = static_cast<size_t>(next - line_starts_.begin());  // 1-based
  return {path_, static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1]) + 1};
}

SourceLoc YamlSource::at(const YAML::Mark& mark) const {
  if (mark.pos < 0) return {path_, 0, 0};
  return at_offset(static_cast<size_t>(mark.pos));
}

SourceLoc YamlSource::node(const YAML::Node& node) const { return at(node.Mark()); }

// Skips `&anchor` and `!tag` in front of a value: yaml-cpp marks the node where they start.
size_t YamlSource::skip_properties(size_t offset) const {
  auto is_blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (offset < text_.size() && (text_[offset] == '&' || text_[offset] == '!')) {
    while (offset < text_.size() && !is_blank(text_[offset])) ++offset;
    while (offset < text_.size() && is_blank(text_[offset])) ++offset;
  }
  return offset;
}

// A `|` or `>` scalar's text starts at the first non-blank line after the indicator line.
size_t YamlSource::block_scalar_start(size_t offset) const {
  size_t pos = text_.find('\n', offset);
  while (pos != std::string_view::npos && pos + 1 < text_.size()) {
    size_t start = pos + 1;
    size_t first = text_.find_first_not_of(" \t\r", start);
    if (first == std::string_view::npos) break;
    if (text_[first] != '\n') return first;
    pos = first;
  }
  return offset;
}

SourceLoc YamlSource::text_of(const YAML::Node& scalar) const {
  long pos = scalar.Mark().pos;
  if (pos < 0) return {path_, 0, 0};
  size_t offset = skip_properties(static_cast<size_t>(pos));
  if (offset >= text_.size()) return at_offset(static_cast<size_t>(pos));
  char c = text_[offset];
  if (c == '"' || c == '\'') return at_offset(offset + 1);
  if (c == '|' || c == '>') return at_offset(block_scalar_start(offset));
  return at_offset(offset);
}

bool YamlSource::is_flow_sequence(const YAML::Node& seq) const {
  long pos = seq.Mark().pos;
  if (pos < 0) return false;
  size_t offset = skip_properties(static_cast<size_t>(pos));
  return offset < text_.size() && text_[offset] == '[';
}

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

// The scalars of a YAML list, each with its own position.
Result<std::vector<Located>> sequence_items(const Entry& entry, const YamlSource& src) {
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
    Located located{item.Scalar(), src.text_of(item)};
    if (blank(located.text))
      return error_at(located.loc, fmt::format("item {} of '{}' is empty", n, entry.key));
    // YAML splits `[comm, lhist(x, 0, 100, 10)]` at every comma: join the pieces of a call again.
    if (flow && !items.empty() && has_unclosed_paren(items.back().text)) {
      items.back().text += ", " + located.text;
      continue;
    }
    items.push_back(std::move(located));
  }
  if (flow && !items.empty() && has_unclosed_paren(items.back().text))
    return error_at(items.back().loc,
                    fmt::format("item '{}' of '{}' has an unclosed '('", items.back().text, entry.key));
  return items;
}

Result<void> expect_list_or_scalar(const Entry& entry, std::string_view expected) {
  if (entry.value.IsScalar() || entry.value.IsSequence()) return {};
  return error_at(entry.value_loc, fmt::format("'{}' must be {}, not {}", entry.key, expected,
                                               kind_name(entry.value)));
}

}  // namespace

Result<std::vector<Located>> text_list(const Entry& entry, const YamlSource& src,
                                       std::string_view expected) {
  if (auto ok = expect_list_or_scalar(entry, expected); !ok) return std::unexpected(ok.error());
  if (entry.value.IsSequence()) return sequence_items(entry, src);
  if (blank(entry.value.Scalar()))
    return error_at(entry.value_loc, fmt::format("'{}' is empty", entry.key));
  return std::vector<Located>{{entry.value.Scalar(), entry.value_loc}};
}

Result<std::vector<Located>> item_list(const Entry& entry, const YamlSource& src) {
  auto ok = expect_list_or_scalar(entry, "a comma-separated list of expressions, or a YAML list");
  if (!ok) return std::unexpected(ok.error());
  if (entry.value.IsSequence()) return sequence_items(entry, src);
  std::vector<Located> items;
  for (TextPiece& piece : split_top_level(entry.value.Scalar(), entry.value_loc)) {
    if (blank(piece.text)) return error_at(piece.loc, fmt::format("empty item in '{}'", entry.key));
    items.push_back({std::move(piece.text), piece.loc});
  }
  if (items.empty()) return error_at(entry.value_loc, fmt::format("'{}' is empty", entry.key));
  return items;
}

}  // namespace bpfql::load
