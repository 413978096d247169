// The expression parser's class, shared by the files that define its parts:
//   parser.cpp           entry points, the token cursor, error messages, node spans
//   parser_operators.cpp precedence climbing: `?:`, binary and word operators, `in`, LIKE, unary
//   parser_operands.cpp  operands: literals, names, calls, parentheses, casts, `->`/`.`/`[N]`
// Private to compiler/syntax/: the interface is parser.h.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/syntax/ast.h"
#include "compiler/syntax/lexer.h"

namespace bpfql::parse {

// Later passes recurse over the tree, so both parser recursion and tree height are bounded.
inline constexpr int kMaxDepth = 256;
inline constexpr const char* kTooDeep = "expression nested too deeply";

// Word operators are case-insensitive (SQL's AND, OR, NOT, IN, LIKE); names are not.
std::string lower(std::string_view word);

// An expression's text for column names and messages: as written, except that a line break and
// the indentation around it read as one space, and a line continuation in a string as nothing.
std::string as_written(std::string_view text);

// A binary operator's spelling, node and binding strength (parser_operators.cpp).
struct InfixOp {
  std::string_view spelling;
  BinaryOp op;
  int precedence;
};

// A subtree with its source span [begin, end) and its height.
struct Parsed {
  ExprPtr expr;
  size_t begin = 0;
  size_t end = 0;
  int height = 1;
};

// A parenthesised, comma-separated list: call arguments or the values of `in`.
struct ParsedList {
  std::vector<ExprPtr> items;
  int height = 0;  // of the tallest item
  size_t end = 0;  // just after ')'
};

class Parser {
 public:
  Parser(std::string_view text, const SourceLoc& start) : lexer_(text, start) {}

  // One whole expression, stopping before whatever follows it.
  Result<Parsed> leading_expression();
  const Token& peek();
  std::unexpected<Diagnostic> unexpected_after_expression();

  const Lexer& lexer() const { return lexer_; }
  const SourceMap& map() const { return lexer_.map(); }

 private:
  // The token cursor and error messages (parser.cpp).
  Token take();
  bool at_punct(std::string_view symbol);
  bool at_word(std::string_view word);
  std::unexpected<Diagnostic> fail(const Token& token, std::string message);
  std::string spelled(const Token& token);
  std::string where(const Token& token);

  // A node spanning [begin, end) of the text, refused when the tree grows too tall.
  template <class Node>
  Result<Parsed> make(Node node, size_t begin, size_t end, int height, const Token& at) {
    if (height > kMaxDepth) return fail(at, kTooDeep);
    Parsed parsed{std::make_unique<Expr>(), begin, end, height};
    parsed.expr->node = std::move(node);
    set_span(parsed);
    return parsed;
  }
  void set_span(Parsed& parsed);

  // Operators, loosest first (parser_operators.cpp).
  Result<Parsed> expression();
  Result<Parsed> conditional();
  std::optional<InfixOp> peek_infix();
  Result<Parsed> binary(int min_precedence);
  Result<Parsed> binary_rhs(Parsed lhs, BinaryOp op, const Token& op_token, int precedence);
  Result<Parsed> in_list(Parsed value, const Token& op_token, bool negated);
  Result<Parsed> like(Parsed value, const Token& op_token, bool negated);
  Result<Parsed> unary();

  // Operands (parser_operands.cpp).
  Result<ParsedList> list_items(const Token& open);
  Result<Parsed> postfix();
  Result<Parsed> primary();
  Result<Parsed> name(Token token);
  Result<Parsed> parenthesised(const Token& open);
  bool at_cast_type();
  Result<Parsed> cast(const Token& open);

  Lexer lexer_;
  std::optional<Token> ahead_;
  int depth_ = 0;
};

}  // namespace bpfql::parse
