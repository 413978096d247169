// The expression lexer: text → tokens with byte offsets. Word operators (`is`, `and`, `in`, ...)
// come out as plain names; the parser decides by position whether a word is an operator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/diagnostics.h"

namespace bpfql {

// Maps byte offsets in an expression's text to positions in the query file: the first line
// starts at `start`, every later line at column 1.
class SourceMap {
 public:
  SourceMap(std::string_view text, SourceLoc start);
  SourceLoc loc(size_t offset) const;

 private:
  SourceLoc start_;
  std::vector<size_t> line_starts_;  // offsets just after each '\n'
};

enum class TokenKind {
  End,      // no more tokens; begin = end = just after the last non-blank character
  Invalid,  // a lexical error, in `error`
  Integer,  // `number` holds the value; durations are already in nanoseconds
  Decimal,  // `99.9`: `value` holds the spelling (allowed only as a percentile, by the checker)
  String,   // `value` holds the unescaped bytes
  Name,     // identifiers, including the words `is not lt gt lteq gteq and or in true false as`
  Param,    // `$name`: `value` is the name
  Field,    // `args.name`: `value` is the name
  Capture,  // `begin.`: a span capture; the operand follows
  Entry,    // `entry.`: a value of a return probe's function entry; the operand follows
  Punct,    // operators, parentheses and commas: `value` is the symbol
};

struct Token {
  TokenKind kind = TokenKind::End;
  size_t begin = 0;  // byte offsets into the lexed text: [begin, end)
  size_t end = 0;
  std::string value;
  uint64_t number = 0;
  Diagnostic error;  // Invalid only
};

// Produces tokens on demand, so that a caller can stop early (the alias after `as` is not lexed).
class Lexer {
 public:
  Lexer(std::string_view text, const SourceLoc& start);

  // The next token. After End or Invalid, every further call returns End.
  Token next();

  std::string_view text() const { return text_; }
  const SourceMap& map() const { return map_; }

 private:
  Token lex_number();
  Token lex_string();
  Token lex_name();
  bool names_member(size_t at) const;
  Token lex_param();
  Token lex_punct();
  Token invalid(size_t at, std::string message);

  std::string_view text_;
  SourceMap map_;
  size_t pos_ = 0;
  size_t trimmed_end_ = 0;
};

// Every token up to and including End, or the first lexical error.
Result<std::vector<Token>> tokenize(std::string_view text, const SourceLoc& start);

// Source text made safe to quote in a message: control and non-ASCII bytes as \xHH, and long
// text cut to 40 bytes with "...".
std::string source_snippet(std::string_view text);

bool is_blank(char c);
bool is_name_start(char c);
bool is_name_char(char c);

}  // namespace bpfql
