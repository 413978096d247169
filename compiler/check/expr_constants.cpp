// Constant integer expressions, as the C compiler would not see them: their exact value (in 128
// bits), the type that value needs, the divisions by zero and the shifts outside 0..63 that C
// leaves undefined, and `&&`/`||` with a constant side (an optional filter turned off).
#include <fmt/format.h>

#include <cstdint>

#include "compiler/check/expr_checker.h"

namespace bpfql::expr_check {
namespace {

// The exact value of an integer expression made of constants (literals, `-`, arithmetic;
// parameters are literals by now), or nullopt. 128 bits hold every sum, difference, quotient
// and shift of 64-bit values that the checks below let through; products are checked.
constexpr Exact kMinInt64 = -(Exact{1} << 63);
constexpr Exact kMaxUint64 = (Exact{1} << 64) - 1;
bool in_64_bits(Exact v) { return v >= kMinInt64 && v <= kMaxUint64; }

std::string exact_text(Exact v) {
  bool negative = v < 0;
  unsigned __int128 m = negative ? -static_cast<unsigned __int128>(v) : v;
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
    m /= 10;
  } while (m != 0);
  return (negative ? "-" : "") + digits;
}

}  // namespace

std::optional<Exact> fold(const Expr& e) {
  if (auto* lit = e.as<IntLiteral>()) return Exact{lit->value};
  if (auto* u = e.as<Unary>(); u && u->op == UnaryOp::Neg) {
    auto v = fold(*u->operand);
    if (!v) return std::nullopt;
    return -*v;
  }
  auto* b = e.as<Binary>();
  if (!b) return std::nullopt;
  auto l = fold(*b->lhs);
  auto r = fold(*b->rhs);
  if (!l || !r || !in_64_bits(*l) || !in_64_bits(*r)) return std::nullopt;
  Exact out = 0;
  switch (b->op) {
    case BinaryOp::Add: return *l + *r;
    case BinaryOp::Sub: return *l - *r;
    case BinaryOp::Mul:
      if (__builtin_mul_overflow(*l, *r, &out)) return kMaxUint64 + 1;  // out of range anyway
      return out;
    case BinaryOp::Div:
      if (*r == 0) return std::nullopt;
      return *l / *r;  // C's: toward zero
    case BinaryOp::Mod:
      if (*r == 0) return std::nullopt;
      return *l % *r;
    case BinaryOp::Shl:
      if (*r < 0 || *r > 63) return std::nullopt;
      return *l * (Exact{1} << static_cast<int>(*r));
    case BinaryOp::Shr:
      if (*r < 0 || *r > 63) return std::nullopt;
      return *l >> static_cast<int>(*r);  // a negative value shifts in sign bits, as s64 does
    default:
      return std::nullopt;
  }
}

// A constant expression gets the type of its value: `1 - 2` is -1 (signed), not 2^64 - 1 as
// unsigned C arithmetic on two literals would make it. Values C cannot hold are errors.
Result<void> type_constant(Expr& e) {
  auto v = fold(e);
  if (!v) return {};
  if (!in_64_bits(*v))
    return error_at(e.loc, fmt::format("'{}' is outside the 64-bit integers "
                                       "(-9223372036854775808..18446744073709551615)", e.text));
  if (*v > INT64_MAX && e.type.is_signed)
    return error_at(e.loc, fmt::format("'{}' is {}, more than a signed 64-bit integer holds "
                                       "(9223372036854775807)", e.text, exact_text(*v)));
  if (*v < 0) e.type = Type::integer(64, true);
  return {};
}

// What C leaves undefined with a constant right operand: division by zero, and shifts by a
// negative count or by 64 bits or more (LLVM may then make anything of the whole condition).
// The operand may be any constant expression: `x / (1 - 1)`, `x << (32 * 2)`, `x / ($n - 64)`.
Result<void> check_constant_operand(const Binary& b) {
  auto rhs = fold(*b.rhs);
  if (!rhs) return {};
  // A literal speaks for itself; `$n` or `(1 - 1)` is shown with its value.
  const auto* neg = b.rhs->as<Unary>();
  const Expr& number = neg && neg->op == UnaryOp::Neg ? *neg->operand : *b.rhs;
  bool literal = number.as<IntLiteral>() && b.rhs->text.find('$') == std::string::npos;
  std::string value = literal ? "" : fmt::format(" ('{}' is {})", b.rhs->text, exact_text(*rhs));
  if ((b.op == BinaryOp::Div || b.op == BinaryOp::Mod) && *rhs == 0)
    return error_at(b.rhs->loc, (b.op == BinaryOp::Div ? "division by zero"
                                                       : "remainder of a division by zero") +
                                    value);
  if ((b.op == BinaryOp::Shl || b.op == BinaryOp::Shr) && (*rhs < 0 || *rhs > 63))
    return error_at(b.rhs->loc, literal ? fmt::format("shift count '{}' is outside 0..63",
                                                      b.rhs->text)
                                        : fmt::format("shift count '{}' is {}, outside 0..63",
                                                      b.rhs->text, exact_text(*rhs)));
  return {};
}

// `true || X` is true, `false && X` false, `true && X` and `false || X` are X: an optional
// filter turned off by its parameter (`$only == "*" || comm == $only`) costs nothing per event.
void fold_constant_side(Expr& e, Binary& b) {
  for (ExprPtr* side : {&b.lhs, &b.rhs}) {
    auto* constant = (*side)->as<BoolLiteral>();
    if (!constant) continue;
    bool is_or = b.op == BinaryOp::Or;
    if (constant->value == is_or) {  // decides the whole
      e.node = BoolLiteral{is_or};
      return;
    }
    ExprPtr& other = side == &b.lhs ? b.rhs : b.lhs;  // the whole is the other side
    if (!other->type.is_bool()) return;  // an integer condition stays as written
    Expr kept = std::move(*other);
    e = std::move(kept);
    return;
  }
}

}  // namespace bpfql::expr_check
