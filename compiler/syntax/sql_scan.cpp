#include "compiler/syntax/sql_scan.h"

#include "compiler/syntax/lexer.h"

namespace bpfql::sql {
namespace {

// Calls `each(i, depth)` for every byte outside string literals, with the parenthesis depth
// before that byte.
template <class Each>
void outside_quotes(std::string_view text, Span span, Each each) {
  char quote = 0;
  int depth = 0;
  for (size_t i = span.begin; i < span.end; ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      continue;
    }
    if (c == ')' && depth > 0) --depth;
    if (!each(i, c == '(' ? depth++ : depth)) return;
  }
}

bool separates(char c) { return is_blank(c) || c == '(' || c == ')' || c == ','; }

}  // namespace

std::string upper(std::string_view word) {
  std::string out(word);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

std::string without_comments(std::string_view text) {
  std::string out(text);
  size_t skip_to = 0;
  outside_quotes(text, {0, text.size()}, [&](size_t i, int) {
    if (i < skip_to) return true;
    if (text.substr(i, 2) == "--") {
      size_t end = text.find('\n', i);
      if (end == std::string_view::npos) end = text.size();
      for (size_t k = i; k < end; ++k) out[k] = ' ';
      skip_to = end;
    }
    return true;
  });
  // A quote the scan ended inside of is left for the expression lexer to report.
  return out;
}

std::vector<Span> statements(std::string_view text) {
  std::vector<Span> out;
  size_t start = 0;
  auto add = [&](size_t end) {
    Span s = trimmed(text, {start, end});
    if (s.begin < s.end) out.push_back(s);
  };
  outside_quotes(text, {0, text.size()}, [&](size_t i, int) {
    if (text[i] == ';') {
      add(i);
      start = i + 1;
    }
    return true;
  });
  add(text.size());
  return out;
}

std::vector<Word> top_level_words(std::string_view text, Span span) {
  std::vector<Word> words;
  size_t skip_to = 0;
  outside_quotes(text, span, [&](size_t i, int depth) {
    if (i < skip_to || depth > 0 || !is_name_start(text[i])) return true;
    size_t end = i;
    while (end < span.end && is_name_char(text[end])) ++end;
    skip_to = end;
    bool apart_before = i == span.begin || separates(text[i - 1]);
    bool apart_after = end == span.end || separates(text[end]);
    if (apart_before && apart_after) words.push_back({i, end, upper(text.substr(i, end - i))});
    return true;
  });
  return words;
}

std::vector<Span> top_level_symbols(std::string_view text, Span span,
                                    const std::vector<std::string_view>& symbols) {
  std::vector<Span> found;
  size_t skip_to = 0;
  outside_quotes(text, span, [&](size_t i, int depth) {
    if (i < skip_to || depth > 0) return true;
    for (std::string_view symbol : symbols)
      if (text.substr(i, symbol.size()) == symbol && i + symbol.size() <= span.end) {
        found.push_back({i, i + symbol.size()});
        skip_to = i + symbol.size();
        break;
      }
    return true;
  });
  return found;
}

Span trimmed(std::string_view text, Span span) {
  while (span.begin < span.end && is_blank(text[span.begin])) ++span.begin;
  while (span.end > span.begin && is_blank(text[span.end - 1])) --span.end;
  return span;
}

std::string_view word_at(std::string_view text, size_t offset) {
  size_t end = offset;
  while (end < text.size() && is_name_char(text[end])) ++end;
  return text.substr(offset, end - offset);
}

}  // namespace bpfql::sql

namespace bpfql::sql {

std::vector<Span> dollar_names(std::string_view text, Span span) {
  std::vector<Span> found;
  outside_quotes(text, span, [&](size_t i, int) {
    if (text[i] != '$' || i + 1 >= span.end || !is_name_start(text[i + 1])) return true;
    size_t end = i + 1;
    while (end < span.end && is_name_char(text[end])) ++end;
    found.push_back({i, end});
    return true;
  });
  return found;
}

}  // namespace bpfql::sql
