// Precedence climbing over the lexer's tokens. The grammar is grammar/expressions.ebnf.
#include "compiler/syntax/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

#include "compiler/syntax/lexer.h"

namespace bpfql {
namespace {

// Later passes recurse over the tree, so both parser recursion and tree height are bounded.
constexpr int kMaxDepth = 256;
constexpr const char* kTooDeep = "expression nested too deeply";

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

// Binding strength, loosest first, as in C.
enum Precedence {
  kLogicalOr = 1,
  kLogicalAnd,
  kBitOr,
  kBitXor,
  kBitAnd,
  kEquality,
  kRelational,
  kShift,
  kAdditive,
  kMultiplicative,
};

struct InfixOp {
  std::string_view spelling;
  BinaryOp op;
  int precedence;
};

constexpr std::array<InfixOp, 18> kSymbolOps = {{
    {"*", BinaryOp::Mul, kMultiplicative},
    {"/", BinaryOp::Div, kMultiplicative},
    {"%", BinaryOp::Mod, kMultiplicative},
    {"+", BinaryOp::Add, kAdditive},
    {"-", BinaryOp::Sub, kAdditive},
    {"<<", BinaryOp::Shl, kShift},
    {">>", BinaryOp::Shr, kShift},
    {"<", BinaryOp::Lt, kRelational},
    {"<=", BinaryOp::Le, kRelational},
    {">", BinaryOp::Gt, kRelational},
    {">=", BinaryOp::Ge, kRelational},
    {"==", BinaryOp::Eq, kEquality},
    {"!=", BinaryOp::Ne, kEquality},
    {"&", BinaryOp::BitAnd, kBitAnd},
    {"^", BinaryOp::BitXor, kBitXor},
    {"|", BinaryOp::BitOr, kBitOr},
    {"&&", BinaryOp::And, kLogicalAnd},
    {"||", BinaryOp::Or, kLogicalOr},
}};

// BPFQL's word operators, plus `and`/`or`. `in` is handled apart: its right side is a list.
constexpr std::array<InfixOp, 8> kWordOps = {{
    {"is", BinaryOp::Eq, kEquality},
    {"not", BinaryOp::Ne, kEquality},
    {"lt", BinaryOp::Lt, kRelational},
    {"gt", BinaryOp::Gt, kRelational},
    {"lteq", BinaryOp::Le, kRelational},
    {"gteq", BinaryOp::Ge, kRelational},
    {"and", BinaryOp::And, kLogicalAnd},
    {"or", BinaryOp::Or, kLogicalOr},
}};

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
  Result<Parsed> leading_expression() {
    if (peek().kind == TokenKind::End) return error_at(map().loc(0), "empty expression");
    return expression();
  }

  const Token& peek() {
    if (!ahead_) ahead_ = lexer_.next();
    return *ahead_;
  }

  std::unexpected<Diagnostic> unexpected_after_expression() {
    const Token& token = peek();
    std::string message = fmt::format("unexpected {} after expression", spelled(token));
    if (token.kind == TokenKind::Name && lower(token.value) == "as")
      message += "; an alias ('as NAME') is only allowed in select and group_by";
    return fail(token, std::move(message));
  }

  const Lexer& lexer() const { return lexer_; }
  const SourceMap& map() const { return lexer_.map(); }

 private:
  Token take() {
    peek();
    Token token = std::move(*ahead_);
    ahead_.reset();
    return token;
  }

  bool at_punct(std::string_view symbol) {
    const Token& token = peek();
    return token.kind == TokenKind::Punct && token.value == symbol;
  }

  bool at_word(std::string_view word) {
    const Token& token = peek();
    return token.kind == TokenKind::Name && lower(token.value) == word;
  }

  // A lexical error wins over the parser's complaint about the same token.
  std::unexpected<Diagnostic> fail(const Token& token, std::string message) {
    if (token.kind == TokenKind::Invalid) return std::unexpected(token.error);
    return error_at(map().loc(token.begin), std::move(message));
  }

  std::string spelled(const Token& token) {
    if (token.kind == TokenKind::End) return "end of expression";
    return fmt::format("'{}'",
                       source_snippet(lexer_.text().substr(token.begin, token.end - token.begin)));
  }

  std::string where(const Token& token) {
    SourceLoc loc = map().loc(token.begin);
    return fmt::format("{}:{}", loc.line, loc.col);
  }

  template <class Node>
  Result<Parsed> make(Node node, size_t begin, size_t end, int height, const Token& at) {
    if (height > kMaxDepth) return fail(at, kTooDeep);
    Parsed parsed{std::make_unique<Expr>(), begin, end, height};
    parsed.expr->node = std::move(node);
    set_span(parsed);
    return parsed;
  }

  void set_span(Parsed& parsed) {
    parsed.expr->loc = map().loc(parsed.begin);
    parsed.expr->text = as_written(lexer_.text().substr(parsed.begin, parsed.end - parsed.begin));
  }

  // Every nested expression (parentheses, arguments, list values) passes through here.
  Result<Parsed> expression() {
    if (depth_ >= kMaxDepth) return fail(peek(), kTooDeep);
    ++depth_;
    Result<Parsed> parsed = conditional();
    --depth_;
    return parsed;
  }

  // `COND ? THEN : ELSE`, the loosest operator, right-associative as in C.
  Result<Parsed> conditional() {
    Result<Parsed> cond = binary(kLogicalOr);
    if (!cond || !at_punct("?")) return cond;
    Token question = take();
    Result<Parsed> then = expression();
    if (!then) return then;
    if (!at_punct(":"))
      return fail(peek(), fmt::format("expected ':' for the '?' at {}", where(question)));
    take();
    Result<Parsed> otherwise = expression();
    if (!otherwise) return otherwise;
    int height = std::max({cond->height, then->height, otherwise->height}) + 1;
    size_t begin = cond->begin;
    size_t end = otherwise->end;
    return make(Conditional{std::move(cond->expr), std::move(then->expr),
                            std::move(otherwise->expr)},
                begin, end, height, question);
  }

  std::optional<InfixOp> peek_infix() {
    const Token& token = peek();
    std::string spelling = token.kind == TokenKind::Name ? lower(token.value) : token.value;
    auto matches = [&](const InfixOp& op) { return op.spelling == spelling; };
    if (token.kind == TokenKind::Punct) {
      auto found = std::ranges::find_if(kSymbolOps, matches);
      if (found != kSymbolOps.end()) return *found;
    } else if (token.kind == TokenKind::Name) {
      auto found = std::ranges::find_if(kWordOps, matches);
      if (found != kWordOps.end()) return *found;
      if (spelling == "in") return InfixOp{"in", BinaryOp::Eq, kEquality};
      if (spelling == "like") return InfixOp{"like", BinaryOp::Eq, kEquality};
    }
    return std::nullopt;
  }

  // Left-associative: the right operand only takes operators that bind tighter.
  Result<Parsed> binary(int min_precedence) {
    Result<Parsed> lhs = unary();
    if (!lhs) return lhs;
    for (;;) {
      std::optional<InfixOp> infix = peek_infix();
      if (!infix || infix->precedence < min_precedence) return lhs;
      Token op_token = take();
      BinaryOp op = infix->op;
      bool negated_in = false;
      bool negated_like = false;
      if (infix->spelling == "is" && at_word("not")) {
        take();
        op = BinaryOp::Ne;
      } else if (infix->spelling == "not" && at_word("in")) {
        take();
        negated_in = true;
      } else if (infix->spelling == "not" && at_word("like")) {
        take();
        negated_like = true;
      }
      if (infix->spelling == "in" || negated_in)
        lhs = in_list(std::move(*lhs), op_token, negated_in);
      else if (infix->spelling == "like" || negated_like)
        lhs = like(std::move(*lhs), op_token, negated_like);
      else
        lhs = binary_rhs(std::move(*lhs), op, op_token, infix->precedence);
      if (!lhs) return lhs;
    }
  }

  Result<Parsed> binary_rhs(Parsed lhs, BinaryOp op, const Token& op_token, int precedence) {
    Result<Parsed> rhs = binary(precedence + 1);
    if (!rhs) return rhs;
    int height = std::max(lhs.height, rhs->height) + 1;
    return make(Binary{op, std::move(lhs.expr), std::move(rhs->expr)}, lhs.begin, rhs->end, height,
                op_token);
  }

  // `VALUE in (A, B, ...)` or `VALUE in NAME` (a list under `lists:`); `VALUE not in (...)` is
  // the negation of it.
  Result<Parsed> in_list(Parsed value, const Token& op_token, bool negated) {
    if (peek().kind == TokenKind::Name) {
      Token name = take();
      size_t begin = value.begin;
      int height = value.height + 1;
      Result<Parsed> in = make(InList{std::move(value.expr), {}, name.value, map().loc(name.begin)},
                               begin, name.end, height, op_token);
      if (!in || !negated) return in;
      return make(Unary{UnaryOp::Not, std::move(in->expr)}, begin, name.end, height + 1, op_token);
    }
    if (!at_punct("("))
      return fail(peek(), fmt::format("expected '(' or a list's name after {}", spelled(op_token)));
    Token open = take();
    if (at_punct(")")) return fail(peek(), "expected at least one value in the list after 'in'");
    Result<ParsedList> list = list_items(open);
    if (!list) return std::unexpected(list.error());
    int height = std::max(value.height, list->height) + 1;
    size_t begin = value.begin;
    Result<Parsed> in = make(InList{std::move(value.expr), std::move(list->items)}, begin,
                             list->end, height, op_token);
    if (!in || !negated) return in;
    return make(Unary{UnaryOp::Not, std::move(in->expr)}, begin, list->end, height + 1, op_token);
  }

  // SQL's `S LIKE 'pattern'`, for the patterns a string test can mean exactly: no wildcard is
  // `==`, 'pre%' is startswith(), '%x%' is contains(). Anything else is refused, never guessed.
  Result<Parsed> like(Parsed value, const Token& op_token, bool negated) {
    if (peek().kind != TokenKind::String)
      return fail(peek(), fmt::format("expected a quoted pattern after {}, such as 'py%'",
                                      spelled(op_token)));
    Token pattern = take();
    const std::string& p = pattern.value;
    auto refuse = [&](std::string why) { return fail(pattern, std::move(why)); };
    if (p.find('_') != std::string::npos)
      return refuse("'_' in a LIKE pattern matches any one character, which bpfql cannot test; "
                    "for a literal '_' write startswith(S, \"pre_\") or contains(S, \"_x\")");
    size_t percents = std::ranges::count(p, '%');
    std::string fixed;
    std::string function;
    if (percents == 0) {
      fixed = p;
    } else if (percents == 1 && p.back() == '%' && p.size() > 1) {
      fixed = p.substr(0, p.size() - 1);
      function = "startswith";
    } else if (percents == 2 && p.size() > 2 && p.front() == '%' && p.back() == '%') {
      fixed = p.substr(1, p.size() - 2);
      function = "contains";
    } else {
      return refuse(fmt::format("LIKE {} cannot be tested: bpfql takes 'text' (equal), 'pre%' "
                                "(starts with) or '%text%' (contains)",
                                source_snippet(lexer_.text().substr(
                                    pattern.begin, pattern.end - pattern.begin))));
    }
    int height = value.height + 1;
    size_t begin = value.begin;
    ExprPtr literal = std::make_unique<Expr>();
    literal->node = StringLiteral{std::move(fixed)};
    literal->loc = map().loc(pattern.begin);
    literal->text = std::string(lexer_.text().substr(pattern.begin, pattern.end - pattern.begin));
    Result<Parsed> test =
        function.empty()
            ? make(Binary{BinaryOp::Eq, std::move(value.expr), std::move(literal)}, begin,
                   pattern.end, height, op_token)
            : [&]() {
                std::vector<ExprPtr> args;
                args.push_back(std::move(value.expr));
                args.push_back(std::move(literal));
                return make(Call{function, std::move(args)}, begin, pattern.end, height, op_token);
              }();
    if (!test || !negated) return test;
    return make(Unary{UnaryOp::Not, std::move(test->expr)}, begin, pattern.end, height + 1,
                op_token);
  }

  // The items after `open` up to and including ')'. An empty list is fine here.
  Result<ParsedList> list_items(const Token& open) {
    ParsedList list;
    if (!at_punct(")")) {
      for (;;) {
        Result<Parsed> item = expression();
        if (!item) return std::unexpected(item.error());
        list.height = std::max(list.height, item->height);
        list.items.push_back(std::move(item->expr));
        if (!at_punct(",")) break;
        take();
      }
    }
    if (!at_punct(")"))
      return fail(peek(), fmt::format("expected ',' or ')' to close '(' at {}", where(open)));
    list.end = take().end;
    return list;
  }

  Result<Parsed> unary() {
    const Token& token = peek();
    std::optional<UnaryOp> op;
    if (token.kind == TokenKind::Punct) {
      if (token.value == "!") op = UnaryOp::Not;
      if (token.value == "~") op = UnaryOp::BitNot;
      if (token.value == "-") op = UnaryOp::Neg;
    } else if (token.kind == TokenKind::Name && lower(token.value) == "not") {
      op = UnaryOp::Not;
    }
    if (!op) return postfix();
    if (depth_ >= kMaxDepth) return fail(token, kTooDeep);
    Token op_token = take();
    ++depth_;
    Result<Parsed> operand = unary();
    --depth_;
    if (!operand) return operand;
    return make(Unary{*op, std::move(operand->expr)}, op_token.begin, operand->end,
                operand->height + 1, op_token);
  }

  // A primary followed by any number of `->NAME`, `.NAME` and `[INDEX]`.
  Result<Parsed> postfix() {
    Result<Parsed> object = primary();
    while (object && (at_punct("->") || at_punct(".") || at_punct("["))) {
      Token op = take();
      if (op.value == "[") {
        Result<Parsed> index = expression();
        if (!index) return index;
        if (!at_punct("]"))
          return fail(peek(), fmt::format("expected ']' to close '[' at {}", where(op)));
        size_t end = take().end;
        int height = std::max(object->height, index->height) + 1;
        size_t begin = object->begin;
        object = make(Index{std::move(object->expr), std::move(index->expr), 0, 0}, begin, end,
                      height, op);
        continue;
      }
      bool arrow = op.value == "->";
      if (arrow && object->expr->as<Identifier>() &&
          object->expr->as<Identifier>()->name == "args") {
        const Token& field = peek();
        std::string name = field.kind == TokenKind::Name ? field.value : "FIELD";
        return fail(op, fmt::format("'args->{0}' is bpftrace's spelling; in bpfql a tracepoint "
                                    "field is 'args.{0}'",
                                    name));
      }
      Token name = take();
      if (name.kind != TokenKind::Name)
        return fail(name, fmt::format("expected a member name after '{}'", op.value));
      int height = object->height + 1;
      size_t begin = object->begin;
      object = make(Member{std::move(object->expr), name.value, arrow, map().loc(name.begin), 0},
                    begin, name.end, height, op);
    }
    return object;
  }

  Result<Parsed> primary() {
    Token token = take();
    switch (token.kind) {
      case TokenKind::Integer:
        return make(IntLiteral{.value = token.number, .from_param = false, .decimal = {}},
                    token.begin, token.end, 1, token);
      case TokenKind::Decimal:
        return make(IntLiteral{0, false, token.value}, token.begin, token.end, 1, token);
      case TokenKind::String:
        return make(StringLiteral{std::move(token.value)}, token.begin, token.end, 1, token);
      case TokenKind::Param:
        return make(ParamRef{std::move(token.value)}, token.begin, token.end, 1, token);
      case TokenKind::Field:
        return make(FieldRef{std::move(token.value)}, token.begin, token.end, 1, token);
      case TokenKind::Name:
        return name(std::move(token));
      case TokenKind::Capture: {
        if (depth_ >= kMaxDepth) return fail(token, kTooDeep);
        ++depth_;
        Result<Parsed> inner = primary();
        --depth_;
        if (!inner) return inner;
        return make(Capture{std::move(inner->expr)}, token.begin, inner->end,
                    inner->height + 1, token);
      }
      case TokenKind::Punct:
        if (token.value == "(") return parenthesised(token);
        break;
      case TokenKind::End:
      case TokenKind::Invalid:
        break;
    }
    return fail(token, fmt::format("unexpected {}; expected an operand", spelled(token)));
  }

  // `true`, `false`, a call, or a bare name left for the checker to resolve.
  Result<Parsed> name(Token token) {
    if (lower(token.value) == "true" || lower(token.value) == "false")
      return make(BoolLiteral{lower(token.value) == "true"}, token.begin, token.end, 1, token);
    if (!at_punct("("))
      return make(Identifier{std::move(token.value)}, token.begin, token.end, 1, token);
    Token open = take();
    Result<ParsedList> args = list_items(open);
    if (!args) return std::unexpected(args.error());
    return make(Call{std::move(token.value), std::move(args->items)}, token.begin, args->end,
                args->height + 1, token);
  }

  // The node keeps the parentheses in its text: a column named "(a + b)" is what was written.
  Result<Parsed> parenthesised(const Token& open) {
    if (at_cast_type()) return cast(open);
    Result<Parsed> inner = expression();
    if (!inner) return inner;
    if (!at_punct(")"))
      return fail(peek(), fmt::format("expected ')' to close '(' at {}", where(open)));
    inner->begin = open.begin;
    inner->end = take().end;
    set_span(*inner);
    return inner;
  }

  // A type name after '(': the fixed-width integers, or `struct`/`union` (a pointer cast).
  bool at_cast_type() {
    const Token& token = peek();
    if (token.kind != TokenKind::Name) return false;
    static constexpr std::array<std::string_view, 10> kWords = {
        "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "struct", "union"};
    return std::ranges::find(kWords, token.value) != kWords.end();
  }

  // `(TYPE) OPERAND`: the cast binds as tightly as a unary operator.
  Result<Parsed> cast(const Token& open) {
    Token first = take();
    std::string type_name = first.value;
    if (first.value == "struct" || first.value == "union") {
      Token tag = take();
      if (tag.kind != TokenKind::Name)
        return fail(tag, fmt::format("expected a {} name after '{}'", first.value, first.value));
      type_name += " " + tag.value;
      int stars = 0;
      while (at_punct("*")) {
        take();
        ++stars;
      }
      if (stars == 0)
        return fail(peek(), fmt::format("a cast to '{}' needs a pointer: '({} *)'", type_name,
                                        type_name));
      type_name += " " + std::string(static_cast<size_t>(stars), '*');
    }
    if (!at_punct(")"))
      return fail(peek(), fmt::format("expected ')' to close the cast at {}", where(open)));
    take();
    if (depth_ >= kMaxDepth) return fail(open, kTooDeep);
    ++depth_;
    Result<Parsed> operand = unary();
    --depth_;
    if (!operand) return operand;
    return make(Cast{std::move(type_name), std::move(operand->expr)}, open.begin, operand->end,
                operand->height + 1, open);
  }

  Lexer lexer_;
  std::optional<Token> ahead_;
  int depth_ = 0;
};

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
