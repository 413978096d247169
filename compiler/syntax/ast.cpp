#include "compiler/syntax/ast.h"

#include <type_traits>

namespace bpfql {

std::string_view operator_text(BinaryOp op) {
  switch (op) {
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Shl: return "<<";
    case BinaryOp::Shr: return ">>";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::BitAnd: return "&";
    case BinaryOp::BitXor: return "^";
    case BinaryOp::BitOr: return "|";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
  }
  return "?";
}

ExprPtr clone_expr(const Expr& e) {
  auto copy = std::make_unique<Expr>();
  copy->loc = e.loc;
  copy->text = e.text;
  copy->type = e.type;
  copy->node = std::visit(
      [](const auto& n) -> decltype(Expr::node) {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, Unary>) {
          return Unary{n.op, clone_expr(*n.operand)};
        } else if constexpr (std::is_same_v<T, Binary>) {
          return Binary{n.op, clone_expr(*n.lhs), clone_expr(*n.rhs)};
        } else if constexpr (std::is_same_v<T, InList>) {
          InList list{clone_expr(*n.value), {}, n.list, n.list_loc};
          for (const auto& item : n.items) list.items.push_back(clone_expr(*item));
          return list;
        } else if constexpr (std::is_same_v<T, Call>) {
          Call call{n.name, {}};
          for (const auto& arg : n.args) call.args.push_back(clone_expr(*arg));
          return call;
        } else if constexpr (std::is_same_v<T, Member>) {
          return Member{clone_expr(*n.object), n.name, n.arrow, n.name_loc, n.offset};
        } else if constexpr (std::is_same_v<T, Index>) {
          return Index{clone_expr(*n.object), clone_expr(*n.index), n.at, n.elem_size, n.variable,
                       n.bound};
        } else if constexpr (std::is_same_v<T, Cast>) {
          return Cast{n.type_name, clone_expr(*n.operand)};
        } else if constexpr (std::is_same_v<T, Conditional>) {
          return Conditional{clone_expr(*n.cond), clone_expr(*n.then), clone_expr(*n.otherwise)};
        } else if constexpr (std::is_same_v<T, Capture>) {
          return Capture{clone_expr(*n.inner)};
        } else if constexpr (std::is_same_v<T, EntryValue>) {
          return EntryValue{clone_expr(*n.inner)};
        } else {
          return n;  // leaves: plain values
        }
      },
      e.node);
  return copy;
}

}  // namespace bpfql
