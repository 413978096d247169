// The expression tree: what the parser builds from the text of `where`, `select`, `group_by`
// and span keys. The checker annotates it in place (types, resolved names).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "compiler/diagnostics.h"
#include "compiler/types.h"

namespace bpfql {

enum class UnaryOp { Not, BitNot, Neg };

enum class BinaryOp {
  Mul, Div, Mod, Add, Sub, Shl, Shr,
  Lt, Le, Gt, Ge, Eq, Ne,
  BitAnd, BitXor, BitOr, And, Or,
};

// How the operator is written: "<=", "&&", ... (the symbol form, which C shares; the BPFQL word
// operators `is`, `lteq`, ... are parsed into the same ops).
std::string_view operator_text(BinaryOp op);

// Builtins a probe may offer; which ones a probe really offers is the checker's business.
enum class Builtin {
  Pid, Tid, Ppid, Uid, Gid, Comm, Cpu, Ts, Cgroup, Probe, Retval, Duration,
  Arg,  // arg0..arg9: the index is in BuiltinRef::arg_index
  Kstack, Ustack,
  Pcomm,  // the parent process's name (current->real_parent->comm, offsets from BTF)
  Curtask,  // the current task: a struct task_struct * (bpf_get_current_task)
  Age,  // report: open: ns since an open span's begin, at the print (computed in user space)
  Depth,  // nest: true: the level of the span a begin opens or an end closes (0 = outermost)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct IntLiteral {
  uint64_t value = 0;  // durations are already in nanoseconds
  bool from_param = false;  // an int/duration `$param`: generated as a run-time constant
  // A fractional number as written ("99.9"; `value` is 0): the checker allows it only as a
  // percentile() argument.
  std::string decimal;
};
struct StringLiteral {
  std::string value;  // unescaped bytes
};
struct BoolLiteral {
  bool value = false;
};
// A bare name as written: a builtin, a tracepoint field, or (BPFQL) an unquoted string word.
// The checker replaces it with a BuiltinRef, a FieldRef or a StringLiteral.
struct Identifier {
  std::string name;
};
struct BuiltinRef {
  Builtin which = Builtin::Pid;
  int arg_index = 0;
};
// `args.NAME`, or a bare NAME the checker resolved to a tracepoint field.
struct FieldRef {
  std::string name;
};
// `$name`; the checker replaces it with a typed literal from the bound parameter value.
struct ParamRef {
  std::string name;
};
struct Unary {
  UnaryOp op = UnaryOp::Not;
  ExprPtr operand;
};
struct Binary {
  BinaryOp op = BinaryOp::Add;
  ExprPtr lhs;
  ExprPtr rhs;
};
// `value in (a, b, ...)`, or `value in NAME` for a list defined under `lists:` (the checker
// fills `items` with its values).
struct InList {
  ExprPtr value;
  std::vector<ExprPtr> items;
  std::string list = {};  // NAME, when the list is named
  SourceLoc list_loc = {};
};
// `name(args...)`: aggregates, str(), startswith(), contains(), display functions.
struct Call {
  std::string name;
  std::vector<ExprPtr> args;
};

// `OBJECT->NAME` (through a pointer) or `OBJECT.NAME` (of a struct); the checker fills in where
// the member is, from BTF.
struct Member {
  ExprPtr object;
  std::string name;
  bool arrow = false;
  SourceLoc name_loc;
  int offset = 0;  // checker: bytes from the struct's start
};
// `OBJECT[INDEX]`: an element of an array, or the INDEX-th one a pointer points at. The index
// is a constant (`at`) or an integer expression evaluated per event (`variable`), checked at run
// time against `bound` (an array's length; 0 for a pointer, which has none).
struct Index {
  ExprPtr object;
  ExprPtr index;
  uint64_t at = 0;        // checker: the constant index
  int elem_size = 0;      // checker: bytes per element
  bool variable = false;  // checker: the index is not a constant
  uint64_t bound = 0;     // checker: a variable index must be below this (0: no bound)
};
// `(u32)x`, `(s64)retval`, `(struct sock *)args.skaddr`.
struct Cast {
  std::string type_name;  // as written, spaces normalised: "u32", "struct sock *"
  ExprPtr operand;
};
// `COND ? THEN : ELSE`.
struct Conditional {
  ExprPtr cond;
  ExprPtr then;
  ExprPtr otherwise;
};
// `begin.EXPR` at a span's end: EXPR evaluated at the begin probe, stored with the span's begin
// time, read back at the end. The checker types `inner` against the begin probes and numbers
// the distinct captures a query uses (CheckedSpan::captures, matched by the inner text).
struct Capture {
  ExprPtr inner;
};
// `entry.EXPR` at a return probe (uretprobe, kretprobe): EXPR evaluated at the same function's
// entry probe, stored there under the activation (the thread and its stack frame) and read back
// at this return (compiler/check/entry_values.h). The checker types `inner` against the entry
// probes and numbers the distinct values a query uses (CheckedQuery::entry_values, by text).
struct EntryValue {
  ExprPtr inner;
};

struct Expr {
  std::variant<IntLiteral, StringLiteral, BoolLiteral, Identifier, BuiltinRef, FieldRef, ParamRef,
               Unary, Binary, InList, Call, Member, Index, Cast, Conditional, Capture,
               EntryValue>
      node;
  SourceLoc loc;     // where the expression starts
  std::string text;  // the source text as written, trimmed (used as the output column name)
  Type type;         // Unknown until the checker has run

  template <class T>
  const T* as() const { return std::get_if<T>(&node); }
  template <class T>
  T* as() { return std::get_if<T>(&node); }
};

// One item of `select` or `group_by`: `EXPR [as NAME]`.
struct SelectItem {
  ExprPtr expr;
  std::optional<std::string> alias;
  SourceLoc alias_loc;

  // The output column name: the alias, else the expression's source text.
  std::string name() const { return alias ? *alias : expr->text; }
};

// A deep copy, types and positions included (for an item the compiler adds next to the user's).
ExprPtr clone_expr(const Expr& e);

}  // namespace bpfql
