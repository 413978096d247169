// The SQL one-liner's lexical layer: comments, statements and the words that can be clause
// keywords. Everything here works on byte offsets into the one-liner's text, so that every
// piece handed on keeps its exact position.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace bpfql::sql {

// [begin, end) in the one-liner's text.
struct Span {
  size_t begin = 0;
  size_t end = 0;
};

// The text with every `-- comment` (outside quotes) turned into blanks: same length, same offsets.
std::string without_comments(std::string_view text);

// Statements separated by top-level `;`; statements that are only blanks are left out.
std::vector<Span> statements(std::string_view text);

// A word ([A-Za-z_][A-Za-z0-9_]*) outside quotes and parentheses that stands apart from what is
// around it (not part of `args.x`, `a:b`, `$x`, `/path`): the only words that can be keywords.
struct Word {
  size_t begin = 0;
  size_t end = 0;
  std::string upper;  // the word in upper case
};
std::vector<Word> top_level_words(std::string_view text, Span span);

// Top-level symbols (outside quotes and parentheses) in `span` equal to one of `symbols`.
std::vector<Span> top_level_symbols(std::string_view text, Span span,
                                    const std::vector<std::string_view>& symbols);

// `span` without blanks at either end.
Span trimmed(std::string_view text, Span span);

// The word (of name characters) at `offset`, or "".
std::string_view word_at(std::string_view text, size_t offset);

std::string upper(std::string_view word);

}  // namespace bpfql::sql

namespace bpfql::sql {

// Every `$name` outside quotes in `span`: the span covers the `$` and the name.
std::vector<Span> dollar_names(std::string_view text, Span span);

}  // namespace bpfql::sql
