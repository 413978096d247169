// The checker of one expression (check_expr's worker), shared by the files that define its
// parts, one concern each:
//   expr.cpp             the walk over the tree, literals, $params, the probes in scope
//   expr_names.cpp       names: builtins, argN, macros, tracepoint fields, `begin.EXPR`
//   expr_operators.cpp   unary and binary operators, comparisons, `in`, `?:`
//   expr_constants.cpp   constant integer expressions: exact values, division by zero, shifts
//   expr_calls.cpp       function names, and the value functions str(), join(), startswith()...
//   expr_kernel_memory.cpp  kernel memory through BTF: `->`, `.`, `[N]`, casts
//   expr_entry.cpp       `entry.EXPR` at a return probe, typed at the function's entry
// Private to compiler/check/: the interface is expr.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/check/expr.h"

namespace bpfql::expr_check {

class ExprChecker {
 public:
  explicit ExprChecker(const ExprScope& scope) : scope_(scope), probes_(*scope.probes) {}

  // Types `e` and every node under it, in place; `depth` bounds the nesting.
  Result<void> check(Expr& e, int depth = 0);

 private:
  const ExprScope& scope_;
  const std::vector<ProbeRef>& probes_;
  std::vector<std::string> expanding_;  // macros being expanded, outermost first

  // Literals and $params (expr.cpp).
  Result<void> visit(Expr& e, IntLiteral& lit, int depth);
  Result<void> visit(Expr& e, StringLiteral& s, int depth);
  Result<void> visit(Expr& e, BoolLiteral& b, int depth);
  Result<void> visit(Expr& e, BuiltinRef& ref, int depth);
  Result<void> visit(Expr& e, ParamRef& ref, int depth);

  // The probes the expression runs on (expr.cpp).
  bool all_tracepoints() const;
  bool every_probe_has_field(const std::string& name) const;
  const ProbeRef& first_non_tracepoint() const;
  std::string probe_phrase() const;  // " for probe SPEC" when there is one probe

  // Names (expr_names.cpp).
  Result<void> visit(Expr& e, Identifier& id, int depth);
  Result<void> expand_macro(Expr& e, const MacroDef& macro, int depth);
  Result<void> visit(Expr& e, FieldRef& ref, int depth);
  Result<Type> type_of_field(const Expr& e, const ProbeRef& probe, const TracepointField& field);
  Result<void> resolve_builtin(Expr& e, Builtin which, int arg_index);
  Result<void> resolve_retval(Expr& e);
  Result<void> resolve_arg(Expr& e, int index);
  Result<void> visit(Expr& e, Capture& c, int depth);
  // `entry.EXPR` (expr_entry.cpp).
  Result<void> visit(Expr& e, EntryValue& v, int depth);

  // Operators (expr_operators.cpp).
  Result<void> visit(Expr& e, Unary& u, int depth);
  void take_word_as_string(Expr& candidate);
  Result<void> visit(Expr& e, Binary& b, int depth);
  Result<void> probe_name_as_index(const Expr& probe, Expr& name);
  Result<void> check_comparable(const Expr& whole, const Expr& lhs, const Expr& rhs);
  std::string string_pointer_hint(const Expr& e) const;
  Result<void> operand_error(const Binary& b, const char* wanted);
  Result<void> visit(Expr& e, InList& in, int depth);
  Result<void> check_named_list(Expr& e, InList& in, int depth);  // `in NAME` (lists:)
  Result<void> visit(Expr& e, Conditional& c, int depth);

  // Calls (expr_calls.cpp).
  Result<void> visit(Expr& e, Call& call, int depth);
  Result<void> check_str(Expr& e, Call& call);
  Result<void> check_join(Expr& e, Call& call);
  Result<void> check_string_test(Expr& e, Call& call);

  // Kernel memory through BTF (expr_kernel_memory.cpp).
  Result<void> visit(Expr& e, Member& m, int depth);
  Result<void> visit(Expr& e, Index& ix, int depth);
  Result<void> check_index(Index& ix, int depth);
  Result<void> record_array_element(Expr& e, Index& ix, const FieldRef& ref);
  Result<void> visit(Expr& e, Cast& c, int depth);
};

// Shared between the parts.

// A `Identifier` that is `arg0`..`arg9`: its index (expr_names.cpp).
bool is_arg_name(const std::string& name, int* index);
// Whether what `probe` hands over lives in user memory: uprobes, USDT, syscall tracepoints.
bool reads_user_memory(const ProbeRef& probe);

// A value that came from a `$param` (the checker put the parameter's value in its place).
inline bool is_from_param(const Expr& e) { return e.text.starts_with("$"); }
// What would let a string hold more; `test` names what can never be true (expr_operators.cpp).
std::string capacity_hint(const Type& t, const std::string& test);

// Constant integer expressions (expr_constants.cpp).
using Exact = __int128;
// The exact value of an integer expression made of constants, or nullopt.
std::optional<Exact> fold(const Expr& e);
// A constant expression gets the type of its value; values C cannot hold are errors.
Result<void> type_constant(Expr& e);
// Division by a constant zero, shifts by a constant outside 0..63: errors.
Result<void> check_constant_operand(const Binary& b);
// `true || X` is true, `false && X` false, `true && X` and `false || X` are X.
void fold_constant_side(Expr& e, Binary& b);

}  // namespace bpfql::expr_check
