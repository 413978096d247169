// Precedence climbing over the lexer's tokens. The grammar is grammar/expressions.ebnf. This
// file holds the entry points (an expression, a select item with its alias, a list split into
// items), the token cursor and the messages the parser's parts share; parser_internal.h lists
// the parts.
#include "compiler/syntax/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "compiler/syntax/parser_internal.h"

namespace bpfql::parse {

// An expression's text for column names and messages: as written, except that a line break and
// the indentation around it (a YAML scalar over several lines) read as one space, and a line
// continuation inside a string literal as nothing.
std::string as_written(std::string_view text) {
  std::string out;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {  // a line continuation
        for (i += 2; i < text.size() && (text[i] == ' ' || text[i] == '\t');) ++i;
        --i;
        continue;
      }
      out += c;
      if (c == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (c == quote)
        quote = 0;
    } else if (is_blank(c)) {
      size_t end = i;
      while (end < text.size() && is_blank(text[end])) ++end;
      std::string_view run = text.substr(i, end - i);
      if (run.find('\n') == std::string_view::npos)
        out += run;
      else
        out += ' ';
      i = end - 1;
    } else {
      if (c == '"' || c == '\'') quote = c;
      out += c;
    }
  }
  return out;
}

// Word operators are case-insensitive (SQL's AND, OR, NOT, IN, LIKE); names are not.
std::string lower(std::string_view word) {
  std::string out(word);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// One whole expression, stopping before whatever follows it.
Result<Parsed> Parser::leading_expression() {
  if (peek().kind == TokenKind::End) return error_at(map().loc(0), "empty expression");
  return expression();
}

const Token& Parser::peek() {
  if (!ahead_) ahead_ = lexer_.next();
  return *ahead_;
}

std::unexpected<Diagnostic> Parser::unexpected_after_expression() {
  const Token& token = peek();
  std::string message = fmt::format("unexpected {} after expression", spelled(token));
  if (token.kind == TokenKind::Name && lower(token.value) == "as")
    message += "; an alias ('as NAME') is only allowed in select and group_by";
  return fail(token, std::move(message));
}

Token Parser::take() {
  peek();
  Token token = std::move(*ahead_);
  ahead_.reset();
  return token;
}

bool Parser::at_punct(std::string_view symbol) {
  const Token& token = peek();
  return token.kind == TokenKind::Punct && token.value == symbol;
}

bool Parser::at_word(std::string_view word) {
  const Token& token = peek();
  return token.kind == TokenKind::Name && lower(token.value) == word;
}

// A lexical error wins over the parser's complaint about the same token.
std::unexpected<Diagnostic> Parser::fail(const Token& token, std::string message) {
  if (token.kind == TokenKind::Invalid) return std::unexpected(token.error);
  return error_at(map().loc(token.begin), std::move(message));
}

std::string Parser::spelled(const Token& token) {
  if (token.kind == TokenKind::End) return "end of expression";
  return fmt::format("'{}'",
                     source_snippet(lexer_.text().substr(token.begin, token.end - token.begin)));
}

std::string Parser::where(const Token& token) {
  SourceLoc loc = map().loc(token.begin);
  return fmt::format("{}:{}", loc.line, loc.col);
}

void Parser::set_span(Parsed& parsed) {
  parsed.expr->loc = map().loc(parsed.begin);
  parsed.expr->text = as_written(lexer_.text().substr(parsed.begin, parsed.end - parsed.begin));
}

}  // namespace bpfql::parse

namespace bpfql {
namespace {

using parse::Parsed;
using parse::Parser;
using parse::lower;

bool is_alias_char(char c) { return is_name_char(c) || c == '.' || c == '(' || c == ')'; }

// The alias after `as`: the rest of the item, trimmed.
Result<std::string> parse_alias(const Parser& parser, size_t after_as, SourceLoc& alias_loc) {
  std::string_view text = parser.lexer().text();
  size_t begin = after_as;
  size_t end = text.size();
  while (begin < end && is_blank(text[begin])) ++begin;
  while (end > begin && is_blank(text[end - 1])) --end;
  alias_loc = parser.map().loc(begin);
  std::string_view alias = text.substr(begin, end - begin);
  if (alias.empty()) return error_at(alias_loc, "expected a name after 'as'");
  if (!is_name_start(alias[0]) || !std::ranges::all_of(alias, is_alias_char))
    return error_at(alias_loc, fmt::format("invalid alias '{}'; an alias is a name such as "
                                           "'total_bytes'",
                                           source_snippet(alias)));
  return std::string(alias);
}

}  // namespace

Result<ExprPtr> parse_expression(std::string_view text, const SourceLoc& start) {
  Parser parser(text, start);
  Result<Parsed> parsed = parser.leading_expression();
  if (!parsed) return std::unexpected(parsed.error());
  if (parser.peek().kind != TokenKind::End) return parser.unexpected_after_expression();
  return std::move(parsed->expr);
}

Result<SelectItem> parse_select_item(std::string_view text, const SourceLoc& start) {
  Parser parser(text, start);
  Result<Parsed> parsed = parser.leading_expression();
  if (!parsed) return std::unexpected(parsed.error());
  SelectItem item;
  item.expr = std::move(parsed->expr);
  const Token& next = parser.peek();
  if (next.kind == TokenKind::End) return item;
  // `as` is a keyword only here, after a complete expression; elsewhere it is a name.
  if (next.kind != TokenKind::Name || lower(next.value) != "as")
    return parser.unexpected_after_expression();
  Result<std::string> alias = parse_alias(parser, next.end, item.alias_loc);
  if (!alias) return std::unexpected(alias.error());
  item.alias = std::move(*alias);
  return item;
}

// Quotes may hold commas and parentheses; a backslash inside quotes escapes the next byte.
// A blank text gives no pieces; an empty piece between commas is kept, so that the parser can
// say "empty expression" at it.
std::vector<TextPiece> split_top_level(std::string_view text, const SourceLoc& start) {
  SourceMap map(text, start);
  std::vector<TextPiece> pieces;
  if (std::ranges::all_of(text, is_blank)) return pieces;
  auto add = [&](size_t begin, size_t end) {
    while (begin < end && is_blank(text[begin])) ++begin;
    while (end > begin && is_blank(text[end - 1])) --end;
    pieces.push_back({std::string(text.substr(begin, end - begin)), map.loc(begin)});
  };
  int depth = 0;
  char quote = 0;
  size_t piece_begin = 0;
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
      depth = std::max(0, depth - 1);  // a stray ')' is the parser's to report
    } else if (c == ',' && depth == 0) {
      add(piece_begin, i);
      piece_begin = i + 1;
    }
  }
  add(piece_begin, text.size());
  return pieces;
}

}  // namespace bpfql
