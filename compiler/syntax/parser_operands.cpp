// Operands: literals, `$params`, `args.NAME`, `begin.EXPR`, names and calls (with their
// argument lists), parentheses and casts, each followed by any `->NAME`, `.NAME` and `[INDEX]`.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "compiler/syntax/parser_internal.h"

namespace bpfql::parse {

// The items after `open` up to and including ')'. An empty list is fine here.
Result<ParsedList> Parser::list_items(const Token& open) {
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

// A primary followed by any number of `->NAME`, `.NAME` and `[INDEX]`.
Result<Parsed> Parser::postfix() {
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

Result<Parsed> Parser::primary() {
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
    case TokenKind::Entry: {
      if (depth_ >= kMaxDepth) return fail(token, kTooDeep);
      ++depth_;
      Result<Parsed> inner = primary();
      --depth_;
      if (!inner) return inner;
      return make(EntryValue{std::move(inner->expr)}, token.begin, inner->end,
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
Result<Parsed> Parser::name(Token token) {
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
Result<Parsed> Parser::parenthesised(const Token& open) {
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
bool Parser::at_cast_type() {
  const Token& token = peek();
  if (token.kind != TokenKind::Name) return false;
  static constexpr std::array<std::string_view, 10> kWords = {
      "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "struct", "union"};
  return std::ranges::find(kWords, token.value) != kWords.end();
}

// `(TYPE) OPERAND`: the cast binds as tightly as a unary operator.
Result<Parsed> Parser::cast(const Token& open) {
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

}  // namespace bpfql::parse
