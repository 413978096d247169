// Builds typed expression trees and checked queries by hand, for tests that feed code generation
// inputs the checker would never produce (unsafe names, odd formats) or need exact control.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/check/check.h"

namespace bpfql::testing::build {

inline ExprPtr node(decltype(Expr::node) n, Type type, std::string text = "") {
  auto e = std::make_unique<Expr>();
  e->node = std::move(n);
  e->type = type;
  e->text = std::move(text);
  e->loc = SourceLoc{"t.yml", 1, 1};
  return e;
}

inline ExprPtr integer(uint64_t value) {
  return node(IntLiteral{.value = value, .from_param = false, .decimal = {}},
              Type::integer(64, false), std::to_string(value));
}
inline ExprPtr string(std::string value) {
  int size = static_cast<int>(value.size()) + 1;
  return node(StringLiteral{value}, Type::string(StringSource::Literal, size), "\"" + value + "\"");
}
inline ExprPtr builtin(Builtin which, Type type, std::string text, int arg_index = 0) {
  return node(BuiltinRef{which, arg_index}, type, std::move(text));
}
inline ExprPtr pid() { return builtin(Builtin::Pid, Type::integer(32, false), "pid"); }
inline ExprPtr comm() {
  return builtin(Builtin::Comm, Type::string(StringSource::Comm, 16), "comm");
}
inline ExprPtr field(std::string name, Type type) {
  std::string text = "args." + name;
  return node(FieldRef{std::move(name)}, type, std::move(text));
}
inline ExprPtr binary(BinaryOp op, ExprPtr lhs, ExprPtr rhs, Type type) {
  std::string text = lhs->text + " ? " + rhs->text;
  return node(Binary{op, std::move(lhs), std::move(rhs)}, type, std::move(text));
}
inline ExprPtr eq(ExprPtr lhs, ExprPtr rhs) {
  return binary(BinaryOp::Eq, std::move(lhs), std::move(rhs), Type::boolean());
}
inline ExprPtr call(std::string name, std::vector<ExprPtr> args, Type type) {
  std::string text = name + "(...)";
  return node(Call{std::move(name), std::move(args)}, type, std::move(text));
}

inline TracepointField tp_field(std::string name, int offset, int size, FieldKind kind,
                                bool is_signed = false, std::string c_type = "") {
  TracepointField f;
  f.name = std::move(name);
  f.c_type = std::move(c_type);
  f.offset = offset;
  f.size = size;
  f.is_signed = is_signed;
  f.kind = kind;
  if (kind == FieldKind::CharArray) f.array_len = size;
  return f;
}

// A format with the four common_* fields, then `fields`.
inline TracepointFormat format(std::string category, std::string name,
                               std::vector<TracepointField> fields) {
  TracepointFormat f;
  f.category = std::move(category);
  f.name = std::move(name);
  f.fields = {tp_field("common_type", 0, 2, FieldKind::Integer),
              tp_field("common_flags", 2, 1, FieldKind::Integer),
              tp_field("common_preempt_count", 3, 1, FieldKind::Integer),
              tp_field("common_pid", 4, 4, FieldKind::Integer, true)};
  f.fields.insert(f.fields.end(), fields.begin(), fields.end());
  return f;
}

inline ProbeRef tracepoint(TracepointFormat format) {
  ProbeRef p;
  p.kind = ProbeKind::Tracepoint;
  p.spec = "tracepoint:" + format.category + ":" + format.name;
  p.loc = SourceLoc{"t.yml", 2, 8};
  p.format = std::move(format);
  return p;
}

// `count()` grouped by `keys` (named by their text) on `probe`.
inline CheckedQuery count_query(ProbeRef probe, std::vector<ExprPtr> keys = {}) {
  CheckedQuery q;
  q.name = "t";
  q.loc = SourceLoc{"t.yml", 1, 1};
  q.probes.push_back(std::move(probe));
  for (auto& k : keys) {
    std::string name = k->text;
    q.columns.push_back(name);
    q.keys.push_back(KeyItem{name, std::move(k), Display::None, SourceLoc{"t.yml", 3, 1}});
  }
  AggregateItem count;
  count.name = "count()";
  q.aggregates.push_back(std::move(count));
  q.columns.push_back("count()");
  return q;
}

}  // namespace bpfql::testing::build
