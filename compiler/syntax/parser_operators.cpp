// Operators by precedence climbing, loosest first as in C: `?:`, `||`, `&&`, `|`, `^`, `&`,
// equality, relations, shifts, `+ -`, `* / %`, then unary operators. BPFQL's word operators
// (`is`, `lt`, `and`, ...), `in (...)` and SQL's LIKE bind as the symbols they stand for.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "compiler/syntax/parser_internal.h"

namespace bpfql::parse {
namespace {

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

}  // namespace

// Every nested expression (parentheses, arguments, list values) passes through here.
Result<Parsed> Parser::expression() {
  if (depth_ >= kMaxDepth) return fail(peek(), kTooDeep);
  ++depth_;
  Result<Parsed> parsed = conditional();
  --depth_;
  return parsed;
}

// `COND ? THEN : ELSE`, the loosest operator, right-associative as in C.
Result<Parsed> Parser::conditional() {
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

std::optional<InfixOp> Parser::peek_infix() {
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
Result<Parsed> Parser::binary(int min_precedence) {
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

Result<Parsed> Parser::binary_rhs(Parsed lhs, BinaryOp op, const Token& op_token, int precedence) {
  Result<Parsed> rhs = binary(precedence + 1);
  if (!rhs) return rhs;
  int height = std::max(lhs.height, rhs->height) + 1;
  return make(Binary{op, std::move(lhs.expr), std::move(rhs->expr)}, lhs.begin, rhs->end, height,
              op_token);
}

// `VALUE in (A, B, ...)` or `VALUE in NAME` (a list under `lists:`); `VALUE not in (...)` is the
// negation of it.
Result<Parsed> Parser::in_list(Parsed value, const Token& op_token, bool negated) {
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
Result<Parsed> Parser::like(Parsed value, const Token& op_token, bool negated) {
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

Result<Parsed> Parser::unary() {
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

}  // namespace bpfql::parse
