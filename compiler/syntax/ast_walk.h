// Visiting every node of an expression tree, children before parents.
#pragma once

#include <functional>

#include "compiler/syntax/ast.h"

namespace bpfql {

inline void for_each_node(const Expr& e, const std::function<void(const Expr&)>& visit) {
  if (auto* u = e.as<Unary>()) for_each_node(*u->operand, visit);
  if (auto* b = e.as<Binary>()) {
    for_each_node(*b->lhs, visit);
    for_each_node(*b->rhs, visit);
  }
  if (auto* in = e.as<InList>()) {
    for_each_node(*in->value, visit);
    for (const auto& item : in->items) for_each_node(*item, visit);
  }
  if (auto* m = e.as<Member>()) for_each_node(*m->object, visit);
  if (auto* ix = e.as<Index>()) {
    for_each_node(*ix->object, visit);
    for_each_node(*ix->index, visit);
  }
  if (auto* c = e.as<Cast>()) for_each_node(*c->operand, visit);
  if (auto* c = e.as<Conditional>()) {
    for_each_node(*c->cond, visit);
    for_each_node(*c->then, visit);
    for_each_node(*c->otherwise, visit);
  }
  if (auto* call = e.as<Call>())
    for (const auto& arg : call->args) for_each_node(*arg, visit);
  // A capture's inner expression runs at the span's begin, not where the capture is used:
  // walkers that care look inside it themselves.
  visit(e);
}

}  // namespace bpfql
