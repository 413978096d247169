// Positions of YAML nodes in the query file, and readers for the shapes of values keys take.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>

#include "compiler/syntax/lexer.h"
#include "compiler/syntax/load_internal.h"
#include "compiler/syntax/parser.h"

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

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// A double-quoted scalar's escape at the start of `raw` (which begins with '\\'): how many raw
// bytes it takes and the bytes yaml-cpp makes of it (nothing for an escaped line break).
struct YamlEscape {
  size_t raw_length = 0;
  std::string bytes;
};

std::optional<YamlEscape> yaml_escape(std::string_view raw) {
  if (raw.size() < 2) return std::nullopt;
  char c = raw[1];
  if (c == '\n' || c == '\r') {  // an escaped line break, and the next line's indentation
    size_t n = raw.starts_with("\\\r\n") ? 3 : 2;
    while (n < raw.size() && (raw[n] == ' ' || raw[n] == '\t')) ++n;
    return YamlEscape{n, ""};
  }
  size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
  if (digits == 0) {
    static constexpr std::string_view kFrom = "0abt\tnvfre \"'\\/N_";
    static constexpr std::string_view kTo =
        std::string_view("\0\a\b\t\t\n\v\f\r\x1b \"'\\/\x85\xa0", 17);
    if (size_t k = kFrom.find(c); k != kFrom.npos) return YamlEscape{2, std::string(1, kTo[k])};
    if (c == 'L') return YamlEscape{2, "\xe2\x80\xa8"};
    if (c == 'P') return YamlEscape{2, "\xe2\x80\xa9"};
    return std::nullopt;
  }
  if (raw.size() < 2 + digits) return std::nullopt;
  uint32_t value = 0;
  for (char h : raw.substr(2, digits)) {
    int v = h >= '0' && h <= '9'   ? h - '0'
            : h >= 'a' && h <= 'f' ? h - 'a' + 10
            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                   : -1;
    if (v < 0) return std::nullopt;
    value = value * 16 + static_cast<uint32_t>(v);
  }
  std::string bytes;  // UTF-8, as yaml-cpp encodes it
  auto byte = [&](uint32_t b) { bytes += static_cast<char>(b); };
  if (value <= 0x7f) {
    byte(value);
  } else if (value <= 0x7ff) {
    byte(0xc0 + (value >> 6)), byte(0x80 + (value & 0x3f));
  } else if (value <= 0xffff) {
    byte(0xe0 + (value >> 12)), byte(0x80 + ((value >> 6) & 0x3f)), byte(0x80 + (value & 0x3f));
  } else {
    byte(0xf0 + (value >> 18)), byte(0x80 + ((value >> 12) & 0x3f));
    byte(0x80 + ((value >> 6) & 0x3f)), byte(0x80 + (value & 0x3f));
  }
  return YamlEscape{2 + digits, bytes};
}

// Walks a scalar's decoded text and its raw text side by side (see expression_text). White space
// outside the expression's string literals is free to change; everything else is kept.
class Layout {
 public:
  // `strings`: the text is an expression whose quotes start string literals (not a probe list).
  Layout(std::string_view decoded, std::string_view raw, char style, bool strings,
         std::function<int(size_t)> raw_column)
      : d_(decoded),
        r_(raw),
        style_(style),
        strings_(strings),
        raw_column_(std::move(raw_column)) {}

  // nullopt when the two texts do not line up (then the caller keeps the decoded text).
  std::optional<std::string> run() {
    while (i_ < d_.size()) {
      bool ok = style_ == '"' && j_ < r_.size() && r_[j_] == '\\' ? escape()
                : style_ == '\'' && d_[i_] == '\'' && r_.substr(j_).starts_with("''")
                    ? doubled_quote()
                : is_space(d_[i_]) && j_ < r_.size() && is_space(r_[j_]) ? spaces()
                                                                         : same_byte();
      if (!ok) return std::nullopt;
    }
    return out_;
  }

 private:
  static bool word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
  }
  static bool operator_char(char c) {
    return std::string_view("<>=!&|").find(c) != std::string_view::npos;
  }

  int layout_column() const {
    size_t newline = out_.rfind('\n');
    if (newline == std::string::npos) return raw_column_(0) + static_cast<int>(out_.size());
    return static_cast<int>(out_.size() - newline);
  }

  // The line breaks not written yet (they fell inside a string literal or a word), then spaces up
  // to the column of the raw byte at j_ (the one about to be written).
  void flush_breaks() {
    out_ += std::string(static_cast<size_t>(pending_), '\n');
    out_ += std::string(static_cast<size_t>(std::max(0, raw_column_(j_) - 1)), ' ');
    pending_ = 0;
  }

  // Outside string literals: flushes pending breaks where white space cannot split a token.
  void emit(char c) {
    if (!quote_ && pending_ && !out_.empty() && !(word_char(out_.back()) && word_char(c)) &&
        !(operator_char(out_.back()) && operator_char(c)))
      flush_breaks();
    out_ += c;
    if (escaped_) {
      escaped_ = false;
    } else if (quote_ && c == '\\') {
      escaped_ = true;
    } else if (quote_ && c == quote_) {
      quote_ = 0;
    } else if (!quote_ && strings_ && (c == '"' || c == '\'')) {
      quote_ = c;
    }
  }

  bool escape() {
    auto e = yaml_escape(r_.substr(j_));
    if (!e || d_.substr(i_, e->bytes.size()) != e->bytes) return false;
    if (e->bytes.empty() && (quote_ && !escaped_)) {  // an escaped line break in a string
      out_ += "\\\n";
      out_ +=
          std::string(static_cast<size_t>(std::max(0, raw_column_(j_ + e->raw_length) - 1)), ' ');
    } else if (e->bytes.empty()) {  // an escaped line break elsewhere (maybe inside a word)
      pending_ += 1;
    }
    i_ += e->bytes.size();
    for (char c : e->bytes) {
      if (!quote_ && is_blank(c)) c = ' ';  // white space, but not a new line of the layout
      out_ += c;  // no flush: the escape's columns are not the decoded text's
      if (c == '\\' || c == '"' || c == '\'') {
        out_.pop_back();
        emit(c);
      }
    }
    j_ += e->raw_length;
    return true;
  }

  bool doubled_quote() {
    emit('\'');
    i_ += 1;
    j_ += 2;
    return true;
  }

  bool spaces() {
    size_t j_end = j_;
    while (j_end < r_.size() && is_space(r_[j_end])) ++j_end;
    std::string_view raw_run = r_.substr(j_, j_end - j_);
    auto breaks = static_cast<int>(std::count(raw_run.begin(), raw_run.end(), '\n'));
    size_t i_end = i_;
    if (breaks == 0) {
      if (d_.substr(i_, raw_run.size()) != raw_run) return false;
      i_end = i_ + raw_run.size();
    } else if (style_ == '"' && j_end < r_.size() && r_[j_end] == '\\') {
      // An escape follows: take only what the fold made (' ' or line breaks), not what it makes.
      i_end = i_ + 1;
      while (d_[i_] == '\n' && i_end < d_.size() && d_[i_end] == '\n') ++i_end;
    } else {
      while (i_end < d_.size() && is_space(d_[i_end])) ++i_end;
    }
    std::string_view decoded_run = d_.substr(i_, i_end - i_);
    i_ = i_end;
    j_ = j_end;
    if (quote_ || escaped_) {
      // Inside a string literal the bytes stay what YAML made of them, written so that the text
      // still follows the file's lines: a line break byte as the escape "\n", and each line break
      // of the file as a line continuation, which the lexer skips with the indentation after it.
      if (breaks == 0) {
        for (char c : decoded_run) emit(c);
        return true;
      }
      if (escaped_) {
        // A backslash before the break: a line continuation (a `|` scalar keeps it), which
        // skips the indentation, so the file's own white space can stand.
        bool one_break =
            decoded_run[0] == '\n' && std::count(decoded_run.begin(), decoded_run.end(), '\n') == 1;
        if (!one_break || breaks != 1) return false;
        for (char c : raw_run) out_ += c == '\r' ? ' ' : c;
        escaped_ = false;
        return true;
      }
      for (char c : decoded_run) out_ += c == '\n' ? std::string("\\n") : std::string(1, c);
      for (int k = 0; k < breaks; ++k) out_ += "\\\n";
      out_ += std::string(static_cast<size_t>(std::max(0, raw_column_(j_) - 1)), ' ');
      return true;
    }
    pending_ += breaks;
    if (pending_) {
      flush_breaks();
      return true;
    }
    // Same line: the raw run, or as many spaces as bring the next byte to its raw column.
    int want = raw_column_(j_) - layout_column();
    if (want == static_cast<int>(raw_run.size()))
      out_ += raw_run;
    else
      out_ += std::string(static_cast<size_t>(std::max(1, want)), ' ');
    return true;
  }

  bool same_byte() {
    if (j_ >= r_.size() || r_[j_] != d_[i_]) return false;
    emit(d_[i_++]);  // with j_ at the byte: a flush puts it at its raw column
    ++j_;
    return true;
  }

  std::string_view d_, r_;
  char style_;
  bool strings_;
  std::function<int(size_t)> raw_column_;
  size_t i_ = 0, j_ = 0;
  std::string out_;
  char quote_ = 0;        // inside an expression's string literal
  bool escaped_ = false;  // after a backslash inside one
  int pending_ = 0;       // line breaks not yet written
};

}  // namespace

Located YamlSource::expression_text(const YAML::Node& scalar, bool strings) const {
  Located located{scalar.Scalar(), text_of(scalar)};
  if (scalar.Mark().pos < 0) return located;
  size_t start = text_offset(scalar);
  size_t mark = skip_properties(static_cast<size_t>(scalar.Mark().pos));
  char style = mark < text_.size() && (text_[mark] == '"' || text_[mark] == '\'') ? text_[mark] : 0;
  Layout layout(located.text, text_.substr(std::min(start, text_.size())), style, strings,
                [&](size_t j) { return at_offset(start + j).col; });
  if (auto text = layout.run()) located.text = std::move(*text);
  return located;
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
