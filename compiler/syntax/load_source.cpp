// Positions of YAML nodes in the query file: yaml-cpp's marks as lines and columns, and where a
// scalar's own text starts (after a quote, an anchor, a tag or a `|` line). An expression's text
// laid out as in the file is load_expression_text.cpp; readers for values, load_values.cpp.
#include <algorithm>

#include "compiler/syntax/load_internal.h"

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

size_t YamlSource::text_offset(const YAML::Node& scalar) const {
  auto pos = static_cast<size_t>(scalar.Mark().pos);
  size_t offset = skip_properties(pos);
  if (offset >= text_.size()) return pos;
  char c = text_[offset];
  if (c == '"' || c == '\'') return offset + 1;
  if (c == '|' || c == '>') return block_scalar_start(offset);
  return offset;
}

SourceLoc YamlSource::text_of(const YAML::Node& scalar) const {
  if (scalar.Mark().pos < 0) return {path_, 0, 0};
  return at_offset(text_offset(scalar));
}

bool YamlSource::unterminated_quote(size_t pos) const {
  size_t offset = skip_properties(pos);
  if (offset >= text_.size() || (text_[offset] != '"' && text_[offset] != '\'')) return false;
  char quote = text_[offset];
  for (size_t i = offset + 1; i < text_.size(); ++i) {
    if (quote == '"' && text_[i] == '\\') {
      ++i;  // an escape: the next byte is never the end
    } else if (text_[i] == quote) {
      if (quote == '\'' && i + 1 < text_.size() && text_[i + 1] == '\'') {
        ++i;  // '' is a quote inside a single-quoted scalar
        continue;
      }
      return false;
    }
  }
  return true;
}

bool YamlSource::is_flow_sequence(const YAML::Node& seq) const {
  long pos = seq.Mark().pos;
  if (pos < 0) return false;
  size_t offset = skip_properties(static_cast<size_t>(pos));
  return offset < text_.size() && text_[offset] == '[';
}

}  // namespace bpfql::load
