// Operators: `!`, `~`, `-`, arithmetic, bitwise, comparisons (of integers, strings, byte arrays,
// `probe` against a probe's name), `&&`/`||`, `in (...)` and `in LIST`, and `?:`, with the BPFQL rule that a
// bare word next to a string is a string.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/check/expr_checker.h"
#include "compiler/check/shared_names.h"

namespace bpfql::expr_check {
namespace {

bool is_condition(const Type& t) { return t.is_bool() || t.is_integer(); }

// Byte arrays are equal when all their bytes are: only two of the same length can be.
Result<void> check_bytes_comparable(const Expr& whole, const Expr& lhs, const Expr& rhs) {
  const Expr& bytes = lhs.type.is_bytes() ? lhs : rhs;
  const Expr& other = lhs.type.is_bytes() ? rhs : lhs;
  if (other.type.is_bytes() && other.type.byte_len == bytes.type.byte_len) return {};
  std::string what = other.type.is_bytes()
                         ? fmt::format("byte array '{}' ({})", other.text, other.type.describe())
                     : other.type.is_string() ? fmt::format("string '{}'", other.text)
                     : other.type.is_bool()   ? fmt::format("condition '{}'", other.text)
                     : other.type.is_integer()
                         ? fmt::format("integer '{}'", other.text)
                         : fmt::format("{} '{}'", other.type.describe(), other.text);
  return error_at(whole.loc, fmt::format("cannot compare byte array '{}' ({}) with {}; a byte "
                                         "array compares only with another of the same length",
                                         bytes.text, bytes.type.describe(), what));
}

}  // namespace

Result<void> ExprChecker::visit(Expr& e, Unary& u, int depth) {
  if (auto r = check(*u.operand, depth + 1); !r) return r;
  const Type& t = u.operand->type;
  switch (u.op) {
    case UnaryOp::Not:
      if (!t.is_bool() && !t.is_integer())
        return error_at(e.loc, fmt::format("'!' needs a condition or an integer, not a {}", t.describe()));
      e.type = Type::boolean();
      break;
    case UnaryOp::BitNot:
      if (!t.is_integer()) return error_at(e.loc, fmt::format("'~' needs an integer, not a {}", t.describe()));
      e.type = t;
      break;
    case UnaryOp::Neg:
      if (!t.is_integer()) return error_at(e.loc, fmt::format("'-' needs an integer, not a {}", t.describe()));
      // A negative literal is an int64: one below INT64_MIN would wrap silently in C.
      if (auto* lit = u.operand->as<IntLiteral>(); lit && lit->value > uint64_t{1} << 63)
        return error_at(e.loc, fmt::format("'{}' is below the smallest integer, "
                                           "-9223372036854775808", e.text));
      e.type = Type::integer(64, true);
      return type_constant(e);  // -(-9223372036854775808) is no int64
  }
  return {};
}

// BPFQL: in `comm is ruby`, an unknown bare word next to a string is a string.
void ExprChecker::take_word_as_string(Expr& candidate) {
  auto* id = candidate.as<Identifier>();
  if (!id) return;
  int arg = 0;
  if (is_builtin_name(id->name) || is_arg_name(id->name, &arg)) return;
  if (all_tracepoints() && every_probe_has_field(id->name)) return;
  candidate.node = StringLiteral{id->name};
}

Result<void> ExprChecker::visit(Expr& e, Binary& b, int depth) {
  if (auto r = check(*b.lhs, depth + 1); !r) return r;
  bool equality = b.op == BinaryOp::Eq || b.op == BinaryOp::Ne;
  if (equality && b.lhs->type.is_string()) take_word_as_string(*b.rhs);
  if (auto r = check(*b.rhs, depth + 1); !r) return r;
  const Type& l = b.lhs->type;
  const Type& r = b.rhs->type;
  std::string op(operator_text(b.op));
  switch (b.op) {
    case BinaryOp::Mul: case BinaryOp::Div: case BinaryOp::Mod: case BinaryOp::Add:
    case BinaryOp::Sub: case BinaryOp::Shl: case BinaryOp::Shr:
      if (!l.is_integer() || !r.is_integer()) return operand_error(b, "integers");
      if (auto ok = check_constant_operand(b); !ok) return ok;
      e.type = Type::integer(64, l.is_signed || r.is_signed);
      return type_constant(e);
    case BinaryOp::BitAnd: case BinaryOp::BitXor: case BinaryOp::BitOr:
      if (l.is_bool() && r.is_bool()) {
        e.type = Type::boolean();
        return {};
      }
      if (!l.is_integer() || !r.is_integer()) return operand_error(b, "integers");
      e.type = Type::integer(std::max(l.bits, r.bits), l.is_signed || r.is_signed);
      return {};
    case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt: case BinaryOp::Ge:
      if (l.is_string() || r.is_string())
        return error_at(e.loc, fmt::format("cannot order strings with '{}' in '{}'; strings "
                                           "support ==, !=, in, startswith() and contains()",
                                           op, e.text));
      if (!l.is_integer() || !r.is_integer()) return operand_error(b, "integers");
      e.type = Type::boolean();
      return {};
    case BinaryOp::Eq: case BinaryOp::Ne:
      if (auto ok = probe_name_as_index(*b.lhs, *b.rhs); !ok) return ok;
      if (auto ok = probe_name_as_index(*b.rhs, *b.lhs); !ok) return ok;
      if (auto ok = check_comparable(e, *b.lhs, *b.rhs); !ok) return ok;
      if (auto *x = b.lhs->as<StringLiteral>(), *y = b.rhs->as<StringLiteral>(); x && y) {
        // `$only == "*"`: a parameter against a literal is known now (an optional filter).
        bool equal = x->value == y->value;
        e.node = BoolLiteral{b.op == BinaryOp::Eq ? equal : !equal};
      }
      e.type = Type::boolean();
      return {};
    case BinaryOp::And: case BinaryOp::Or:
      if (!is_condition(l) || !is_condition(r)) return operand_error(b, "conditions");
      e.type = Type::boolean();
      fold_constant_side(e, b);
      return {};
  }
  return {};
}

// `probe` is the index of the probe that fired, printed as its spec: a string compared with
// it (`probe == "tracepoint:syscalls:sys_enter_write"`, or without the kind,
// "syscalls:sys_enter_write") names one of the probes and becomes that index.
Result<void> ExprChecker::probe_name_as_index(const Expr& probe, Expr& name) {
  const auto* ref = probe.as<BuiltinRef>();
  const auto* lit = name.as<StringLiteral>();
  if (!ref || ref->which != Builtin::Probe || !lit) return {};
  std::vector<std::string> specs;
  for (size_t i = 0; i < probes_.size(); ++i) {
    const std::string& spec = probes_[i].spec;
    size_t colon = spec.find(':');
    if (lit->value == spec || (colon != std::string::npos && lit->value == spec.substr(colon + 1))) {
      name.node = IntLiteral{.value = i, .from_param = false, .decimal = {}};
      name.type = Type::integer(32, false);
      return {};
    }
    specs.push_back(spec);
  }
  return error_at(name.loc, fmt::format("\"{}\" is not a probe of this query{}", lit->value,
                                        did_you_mean(lit->value, specs)));
}

Result<void> ExprChecker::check_comparable(const Expr& whole, const Expr& lhs, const Expr& rhs) {
  const Type& l = lhs.type;
  const Type& r = rhs.type;
  if (l.is_string() && r.is_string()) {
    if (lhs.as<StringLiteral>() && rhs.as<StringLiteral>()) {
      if (!is_from_param(lhs) && !is_from_param(rhs))
        return error_at(whole.loc, fmt::format("'{}' compares two constants", whole.text));
      return {};  // a parameter against a literal: decided now, whatever their lengths
    }
    for (const Expr* side : {&lhs, &rhs}) {
      const Expr* other = side == &lhs ? &rhs : &lhs;
      if (auto* lit = side->as<StringLiteral>())
        if (static_cast<int>(lit->value.size()) >= other->type.str_size)
          return error_at(side->loc,
                          fmt::format("\"{}\" is {} bytes, but '{}' holds at most {} {}",
                                      lit->value, lit->value.size(), other->text,
                                      other->type.str_size - 1,
                                      capacity_hint(other->type, "the comparison")));
    }
    return {};
  }
  if (l.is_bytes() || r.is_bytes()) return check_bytes_comparable(whole, lhs, rhs);
  if ((l.is_integer() || l.is_bool()) && (r.is_integer() || r.is_bool())) return {};
  if (l.kind == TypeKind::Stack || r.kind == TypeKind::Stack)
    return error_at(whole.loc, fmt::format("stacks cannot be compared in '{}'", whole.text));
  const Expr& str = l.is_string() ? lhs : rhs;
  const Expr& other = l.is_string() ? rhs : lhs;
  return error_at(whole.loc, fmt::format("cannot compare string '{}' with {} '{}'{}", str.text,
                                         other.type.is_bool() ? "condition" : "integer",
                                         other.text, string_pointer_hint(other)));
}

// What would let a string hold more: `strlen` sizes the strings bpfql reads (pointers,
// __data_loc fields), never comm's 16 bytes or a char[N] field's N, and then `test` is false.
std::string capacity_hint(const Type& t, const std::string& test) {
  if (t.source == StringSource::Comm)
    return fmt::format("(`strlen` does not change comm's {} bytes), so {} can never be true",
                       t.str_size, test);
  if (t.source == StringSource::CharArray)
    return fmt::format("(`strlen` does not change a char[{}] field), so {} can never be true",
                       t.str_size, test);
  return "(raise `strlen` to read more)";
}

// A `char *` field is an address (only `const char *` is read as a string): say how to read it.
std::string ExprChecker::string_pointer_hint(const Expr& e) const {
  const auto* ref = e.as<FieldRef>();
  if (!ref || probes_.empty() || !probes_.front().format) return "";
  const TracepointField* field = probes_.front().format->field(ref->name);
  if (!field || field->c_type.find('*') == std::string::npos ||
      field->c_type.find("char") == std::string::npos)
    return "";
  return fmt::format(" (a '{}' address); read the string with 'str({})'", field->c_type, e.text);
}

Result<void> ExprChecker::operand_error(const Binary& b, const char* wanted) {
  const Expr& bad = b.lhs->type.is_integer() || (std::string(wanted) == "conditions" &&
                                                 is_condition(b.lhs->type))
                        ? *b.rhs
                        : *b.lhs;
  return error_at(bad.loc, fmt::format("'{}' needs {}, but '{}' is a {}", operator_text(b.op),
                                       wanted, bad.text, bad.type.describe()));
}

Result<void> ExprChecker::visit(Expr& e, InList& in, int depth) {
  if (!in.list.empty()) return check_named_list(e, in, depth);
  if (in.items.empty()) return error_at(e.loc, "'in' needs at least one value");
  if (in.items.size() > 64) return error_at(e.loc, "'in' takes at most 64 values");
  if (auto r = check(*in.value, depth + 1); !r) return r;
  for (auto& item : in.items) {
    if (in.value->type.is_string()) take_word_as_string(*item);
    if (auto r = check(*item, depth + 1); !r) return r;
    if (auto ok = probe_name_as_index(*in.value, *item); !ok) return ok;
    if (auto ok = check_comparable(*item, *in.value, *item); !ok) return ok;
  }
  e.type = Type::boolean();
  return {};
}

// `VALUE in NAME`: the list's values checked as if written in place; an error in one points at
// the name, with a note at the value in the definition.
Result<void> ExprChecker::check_named_list(Expr& e, InList& in, int depth) {
  auto list = find_list(in, scope_.lists, scope_.macros);
  if (!list) return std::unexpected(list.error());
  if (auto r = check(*in.value, depth + 1); !r) return r;
  if (auto r = check_list_type(in, **list, in.value->type); !r) return r;
  if (auto r = fill_list_items(in, **list); !r) return r;
  for (auto& item : in.items) {
    Result<void> checked = check(*item, depth + 1);
    if (checked) checked = probe_name_as_index(*in.value, *item);
    if (checked) checked = check_comparable(*item, *in.value, *item);
    if (!checked) return std::unexpected(in_definition(checked.error(), in.list_loc, "list", in.list));
  }
  e.type = Type::boolean();
  return {};
}

Result<void> ExprChecker::visit(Expr& e, Conditional& c, int depth) {
  for (Expr* part : {c.cond.get(), c.then.get(), c.otherwise.get()})
    if (auto r = check(*part, depth + 1); !r) return r;
  if (!is_condition(c.cond->type))
    return error_at(c.cond->loc, fmt::format("the condition of '?' must be a comparison or an "
                                             "integer, but '{}' is a {}",
                                             c.cond->text, c.cond->type.describe()));
  const Type& a = c.then->type;
  const Type& b = c.otherwise->type;
  if (a.is_bool() && b.is_bool()) {
    e.type = Type::boolean();
    return {};
  }
  if ((a.is_integer() || a.is_bool()) && (b.is_integer() || b.is_bool())) {
    int bits = std::max(a.is_bool() ? 8 : a.bits, b.is_bool() ? 8 : b.bits);
    e.type = Type::integer(bits, (a.is_integer() && a.is_signed) || (b.is_integer() && b.is_signed));
    return {};
  }
  const Expr& bad = a.is_integer() || a.is_bool() ? *c.otherwise : *c.then;
  return error_at(bad.loc, fmt::format("'?:' chooses between numbers, but '{}' is a {}{}",
                                       bad.text, bad.type.describe(),
                                       bad.type.is_string()
                                           ? "; to print a name for a number, select the "
                                             "number and let the output name it"
                                           : ""));
}

}  // namespace bpfql::expr_check
