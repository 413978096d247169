#include "compiler/check/expr.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "compiler/syntax/parser.h"
#include "compiler/check/kernel_access.h"
#include "compiler/check/kernel_types.h"

namespace bpfql {
namespace {

const std::vector<std::string> kAggregateFunctions = {"count", "sum",  "avg",   "min",       "max",
                                                      "stats", "hist", "lhist", "percentile"};
const std::vector<std::string> kDisplayFunctions = {
    "syscall", "user", "errno", "ksym", "usym",
    // name functions and unit declarations (check_select.cpp, compiler/units.h)
    "signal", "tcp_state", "open_flags", "task_state", "ip", "cgroup_path", "disk", "softirq",
    "irq", "symbolic", "nsecs", "usecs", "msecs", "secs", "bytes", "rate"};
const std::vector<std::string> kValueFunctions = {"str", "startswith", "contains", "join"};

struct BuiltinName {
  const char* name;
  Builtin which;
};
constexpr BuiltinName kBuiltins[] = {
    {"pid", Builtin::Pid},       {"tid", Builtin::Tid},       {"ppid", Builtin::Ppid},
    {"uid", Builtin::Uid},       {"gid", Builtin::Gid},       {"comm", Builtin::Comm},
    {"pcomm", Builtin::Pcomm},
    {"cpu", Builtin::Cpu},       {"ts", Builtin::Ts},         {"cgroup", Builtin::Cgroup},
    {"probe", Builtin::Probe},   {"retval", Builtin::Retval}, {"duration", Builtin::Duration},
    {"kstack", Builtin::Kstack}, {"ustack", Builtin::Ustack}, {"curtask", Builtin::Curtask},
};

bool is_arg_name(const std::string& name, int* index) {
  if (name.size() != 4 || name.compare(0, 3, "arg") != 0 || name[3] < '0' || name[3] > '9')
    return false;
  *index = name[3] - '0';
  return true;
}

bool is_syscall_tracepoint(const ProbeRef& probe) {
  return probe.kind == ProbeKind::Tracepoint && probe.format && probe.format->category == "syscalls";
}

bool reads_user_memory(const ProbeRef& probe) {
  switch (probe.kind) {
    case ProbeKind::Uprobe:
    case ProbeKind::Uretprobe:
    case ProbeKind::Usdt: return true;
    case ProbeKind::Tracepoint: return is_syscall_tracepoint(probe);
    default: return false;
  }
}

constexpr int kJoinMaxSize = 1024;

// "char **" for a pointer to `pointee` (a char *).
std::string pointer_spelling(const KernelType& pointee) {
  std::string s = pointee.spelling();
  return s + (s.ends_with("*") ? "*" : " *");
}  // join()'s string, at most (a power of two)

class ExprChecker {
 public:
  explicit ExprChecker(const ExprScope& scope) : scope_(scope), probes_(*scope.probes) {}

  Result<void> check(Expr& e, int depth = 0) {
    if (depth > 512) return error_at(e.loc, "expression nested too deeply");
    auto r = std::visit([&](auto& node) { return visit(e, node, depth); }, e.node);
    if (r && depth == 0 && e.type.is_place())
      return error_at(e.loc, fmt::format("'{}' is a {}, not a value: take one of its members "
                                         "('.NAME'){}",
                                         e.text, e.type.describe(),
                                         e.type.ktype->kind == KernelType::Kind::Array
                                             ? " or index it ('[N]')"
                                             : ""));
    return r;
  }

 private:
  const ExprScope& scope_;
  const std::vector<ProbeRef>& probes_;
  std::vector<std::string> expanding_;  // macros being expanded, outermost first

  // Literals.
  Result<void> visit(Expr& e, IntLiteral& lit, int) {
    if (!lit.decimal.empty())
      return error_at(e.loc, fmt::format("'{}': numbers are integers; a fractional number is "
                                         "allowed only as a percentile, as in "
                                         "percentile(duration, 99.9)",
                                         lit.decimal));
    e.type = Type::integer(64, false);
    return {};
  }
  Result<void> visit(Expr& e, StringLiteral& s, int) {
    if (s.value.find('\0') != std::string::npos)
      return error_at(e.loc, "a string literal cannot contain a NUL byte");
    if (s.value.size() > 255) return error_at(e.loc, "string literal is longer than 255 bytes");
    e.type = Type::string(StringSource::Literal, static_cast<int>(s.value.size()) + 1);
    return {};
  }
  Result<void> visit(Expr& e, BoolLiteral&, int) {
    e.type = Type::boolean();
    return {};
  }
  Result<void> visit(Expr&, BuiltinRef&, int) { return {}; }  // already resolved

  Result<void> visit(Expr& e, ParamRef& ref, int depth) {
    if (!scope_.params) return error_at(e.loc, fmt::format("unknown parameter '${}'", ref.name));
    auto it = scope_.params->find(ref.name);
    if (it == scope_.params->end()) {
      std::vector<std::string> names;
      for (const auto& [name, value] : *scope_.params) names.push_back(name);
      return error_at(e.loc, fmt::format("unknown parameter '${}'", ref.name) +
                                 did_you_mean(ref.name, names) +
                                 (names.empty() ? " (declare it under 'params:')" : ""));
    }
    const ParamValue& value = it->second;
    switch (value.type) {
      case ParamType::String: e.node = StringLiteral{value.str}; break;
      case ParamType::Bool: e.node = BoolLiteral{value.num != 0}; break;
      case ParamType::Int:
      case ParamType::Duration:
        if (value.num >= 0) {
          e.node = IntLiteral{
              .value = static_cast<uint64_t>(value.num), .from_param = true, .decimal = {}};
        } else {
          auto magnitude = std::make_unique<Expr>();
          magnitude->node = IntLiteral{
              .value = 0 - static_cast<uint64_t>(value.num), .from_param = true, .decimal = {}};
          magnitude->loc = e.loc;
          magnitude->text = e.text;
          e.node = Unary{UnaryOp::Neg, std::move(magnitude)};
        }
        break;
    }
    return check(e, depth + 1);
  }

  // Names.
  Result<void> visit(Expr& e, Identifier& id, int depth) {
    std::string name = id.name;
    for (const auto& builtin : kBuiltins)
      if (name == builtin.name) return resolve_builtin(e, builtin.which, 0);
    int arg = 0;
    if (is_arg_name(name, &arg)) return resolve_builtin(e, Builtin::Arg, arg);
    if (scope_.macros)
      if (auto macro = scope_.macros->find(name); macro != scope_.macros->end()) {
        if (all_tracepoints() && every_probe_has_field(name))
          return error_at(e.loc, fmt::format("'{}' is both a macro (defined at {}:{}) and a field "
                                             "of this probe; write args.{} for the field, or "
                                             "rename the macro",
                                             name, macro->second.name_loc.file,
                                             macro->second.name_loc.line, name));
        return expand_macro(e, macro->second, depth);
      }
    if (all_tracepoints() && every_probe_has_field(name)) {
      e.node = FieldRef{name};
      return check(e, depth + 1);
    }
    // bpftrace habit: `count` for `count()`.
    if (is_aggregate_function(name) || is_display_function(name))
      return error_at(e.loc, fmt::format("unknown name '{0}'{1}; '{0}' is a function: write "
                                         "'{0}()'{2}",
                                         name, probe_phrase(),
                                         name == "count" ? "" : " with its argument"));
    return error_at(e.loc, fmt::format("unknown name '{}'{}", name, probe_phrase()) +
                               did_you_mean(name, names_in_scope(scope_)));
  }

  // A macro's expression takes the place of its name: parsed where it is defined, checked here
  // (on this query's probes). An error inside it points at the definition and names the use.
  Result<void> expand_macro(Expr& e, const MacroDef& macro, int depth) {
    auto at_use = [&](Diagnostic d) {
      d.message += fmt::format(" (in macro '{}', used at {}:{}:{})", macro.name, e.loc.file,
                               e.loc.line, e.loc.col);
      return std::unexpected(std::move(d));
    };
    if (std::ranges::find(expanding_, macro.name) != expanding_.end()) {
      std::string chain;
      for (const auto& m : expanding_) chain += m + " -> ";
      return error_at(macro.name_loc, fmt::format("macro '{}' uses itself ({}{})", macro.name,
                                                  chain, macro.name));
    }
    auto parsed = parse_expression(macro.text.text, macro.text.loc);
    if (!parsed) return at_use(parsed.error());
    expanding_.push_back(macro.name);
    auto checked = check(**parsed, depth + 1);
    expanding_.pop_back();
    if (!checked) return at_use(checked.error());
    SourceLoc use = e.loc;
    std::string text = e.text;
    e = std::move(**parsed);
    e.loc = std::move(use);  // later errors about the whole value point at the use
    e.text = std::move(text);
    return {};
  }

  Result<void> visit(Expr& e, FieldRef& ref, int) {
    if (!all_tracepoints()) {
      const ProbeRef& other = first_non_tracepoint();
      return error_at(e.loc, fmt::format("'args.{}': only tracepoints have fields; probe '{}' "
                                         "offers arg0..arg5 (and retval on return probes)",
                                         ref.name, other.spec));
    }
    std::optional<Type> type;
    for (const auto& probe : probes_) {
      const TracepointField* field = probe.format->field(ref.name);
      if (!field)
        return error_at(e.loc, fmt::format("unknown field '{}' in tracepoint {}:{}", ref.name,
                                           probe.format->category, probe.format->name) +
                                   did_you_mean(ref.name, probe.format->field_names()));
      auto field_type = type_of_field(e, probe, *field);
      if (!field_type) return std::unexpected(field_type.error());
      add_pointee(*field_type, probe, *field);
      if (!type) {
        type = *field_type;
      } else if (type->kind != field_type->kind) {
        return error_at(e.loc, fmt::format("field '{}' has different types in the probes of this "
                                           "query ({} and {})",
                                           ref.name, type->describe(), field_type->describe()));
      } else if (type->is_bytes() && type->byte_len != field_type->byte_len) {
        return error_at(e.loc, fmt::format("field '{}' has different types in the probes of this "
                                           "query ({} and {})",
                                           ref.name, type->describe(), field_type->describe()));
      } else if (type->is_integer()) {
        type->bits = std::max(type->bits, field_type->bits);
        type->is_signed = type->is_signed || field_type->is_signed;
      } else if (type->is_string() && type->source != field_type->source) {
        return error_at(e.loc, fmt::format("field '{}' is stored differently in the probes of "
                                           "this query; list them in separate queries",
                                           ref.name));
      }
    }
    e.type = *type;
    return {};
  }

  // A pointer field remembers what its format says it points to (`struct sock *`, argv's
  // `const char *const *`), in user memory on syscall tracepoints: `->` and `[N]` read through it.
  static void add_pointee(Type& t, const ProbeRef& probe, const TracepointField& field) {
    if (!t.is_integer() || field.c_type.find('*') == std::string::npos) return;
    auto spelled = kernel_type_from_spelling(field.c_type);
    if (!spelled || spelled->kind != KernelType::Kind::Pointer || !spelled->target) return;
    t.ktype = spelled->target;
    t.user_memory = is_syscall_tracepoint(probe);
  }

  Result<Type> type_of_field(const Expr& e, const ProbeRef& probe, const TracepointField& field) {
    switch (field.kind) {
      case FieldKind::Integer:
        return Type::integer(field.value_bytes() * 8, field.value_is_signed());
      case FieldKind::CharArray: return Type::string(StringSource::CharArray, field.array_len);
      case FieldKind::DataLoc:
        return Type::string(StringSource::DataLoc, static_cast<int>(scope_.strlen));
      case FieldKind::CharPtr:
        return Type::string(is_syscall_tracepoint(probe) ? StringSource::UserPtr
                                                         : StringSource::KernelPtr,
                            static_cast<int>(scope_.strlen));
      case FieldKind::ByteArray:
        if (field.array_len > kMaxByteArray)
          return error_at(e.loc, fmt::format("field '{}' of tracepoint {}:{} is a byte array of {} "
                                             "bytes ('{}'); expressions can use byte arrays of at "
                                             "most {} bytes",
                                             field.name, probe.format->category, probe.format->name,
                                             field.array_len, field.c_type, kMaxByteArray));
        return Type::bytes(field.array_len);
      case FieldKind::Other: break;
    }
    return error_at(e.loc, fmt::format("field '{}' of tracepoint {}:{} has type '{}', which "
                                       "expressions cannot use",
                                       field.name, probe.format->category, probe.format->name,
                                       field.c_type));
  }

  Result<void> resolve_builtin(Expr& e, Builtin which, int arg_index) {
    switch (which) {
      case Builtin::Pid:
      case Builtin::Tid:
      case Builtin::Ppid:
      case Builtin::Uid:
      case Builtin::Gid:
      case Builtin::Cpu:
      case Builtin::Probe: e.type = Type::integer(32, false); break;
      case Builtin::Ts:
      case Builtin::Cgroup: e.type = Type::integer(64, false); break;
      case Builtin::Comm: e.type = Type::string(StringSource::Comm, 16); break;
      case Builtin::Pcomm: e.type = Type::string(StringSource::KernelPtr, 16); break;
      case Builtin::Kstack:
      case Builtin::Ustack:
        if (scope_.role != ExprRole::Key && scope_.role != ExprRole::Value)
          return error_at(e.loc, fmt::format("'{}' can only be a group_by key or a selected value",
                                             e.text));
        e.type = Type::stack();
        break;
      case Builtin::Duration:
        if (!scope_.in_span_end)
          return error_at(e.loc, "'duration' exists only in span queries (at the end probe)");
        e.type = Type::integer(64, false);
        break;
      case Builtin::Curtask: {
        if (!scope_.catalog || !scope_.catalog->has_kernel_btf())
          return error_at(e.loc, "'curtask' needs the kernel's BTF (/sys/kernel/btf/vmlinux), "
                                 "which this kernel does not provide");
        e.type = Type::integer(64, false);
        KernelType task;
        task.kind = KernelType::Kind::Struct;
        task.name = "task_struct";
        e.type.ktype = std::make_shared<const KernelType>(std::move(task));
        break;
      }
      case Builtin::Retval: return resolve_retval(e);
      case Builtin::Arg: return resolve_arg(e, arg_index);
    }
    e.node = BuiltinRef{which, arg_index};
    return {};
  }

  Result<void> resolve_retval(Expr& e) {
    bool all_return = std::all_of(probes_.begin(), probes_.end(),
                                  [](const ProbeRef& p) { return p.is_return(); });
    if (all_return) {
      e.node = BuiltinRef{Builtin::Retval, 0};
      e.type = Type::integer(64, true);
      return {};
    }
    // syscalls:sys_exit_* (and raw_syscalls:sys_exit) carry the return value as field `ret`.
    bool all_exit = std::all_of(probes_.begin(), probes_.end(), [](const ProbeRef& p) {
      return p.kind == ProbeKind::Tracepoint && p.format && p.format->field("ret") &&
             p.format->name.find("exit") != std::string::npos;
    });
    if (all_exit) {
      e.node = FieldRef{"ret"};
      return check(e);
    }
    const ProbeRef& entry = *std::find_if(probes_.begin(), probes_.end(), [](const ProbeRef& p) {
      return !p.is_return() && !(p.format && p.format->field("ret"));
    });
    return error_at(e.loc, fmt::format("'retval' exists only on return probes (kretprobe, "
                                       "uretprobe, syscalls:sys_exit_*); '{}' is an entry probe",
                                       entry.spec));
  }

  Result<void> resolve_arg(Expr& e, int index) {
    std::optional<Type> type;
    for (const auto& probe : probes_) {
      Type arg_type;
      switch (probe.kind) {
        case ProbeKind::Kretprobe:
        case ProbeKind::Uretprobe:
          return error_at(e.loc, fmt::format(
                                     "'{}' does not exist at the return probe '{}': the argument "
                                     "registers are overwritten by the time the function returns; "
                                     "use a span from the entry probe and read begin.{} at the "
                                     "return",
                                     e.text, probe.spec, e.text));
        case ProbeKind::Kprobe:
        case ProbeKind::Uprobe:
          if (index > 5)
            return error_at(e.loc, fmt::format("'{}': function probes offer arg0..arg5", e.text));
          arg_type = Type::integer(64, false);
          break;
        case ProbeKind::Usdt: {
          int count = static_cast<int>(probe.usdt_arg_sizes.size());
          if (index >= count)
            return error_at(e.loc, fmt::format("'{}': USDT probe '{}' has {} argument{}{}", e.text,
                                               probe.spec, count, count == 1 ? "" : "s",
                                               count ? fmt::format(" (arg0..arg{})", count - 1) : ""));
          int size = probe.usdt_arg_sizes[index];
          int bytes = std::clamp(size < 0 ? -size : size, 1, 8);
          arg_type = Type::integer(bytes * 8, size < 0);
          break;
        }
        default:
          return error_at(e.loc, fmt::format("'{}' is not available on '{}'{}", e.text, probe.spec,
                                             probe.kind == ProbeKind::Tracepoint
                                                 ? "; tracepoints have fields: use args.NAME"
                                                 : ""));
      }
      if (!type) type = arg_type;
      type->bits = std::max(type->bits, arg_type.bits);
      type->is_signed = type->is_signed || arg_type.is_signed;
    }
    e.node = BuiltinRef{Builtin::Arg, index};
    e.type = *type;
    return {};
  }

  // `begin.EXPR`: typed at the begin probes, stored at begin, read at the end.
  Result<void> visit(Expr& e, Capture& c, int depth) {
    if (!scope_.begin_scope)
      return error_at(e.loc, fmt::format("'{}': 'begin.' names a value of a span's begin, usable "
                                         "only at its end (in where, select and group_by of a "
                                         "query with `span:`)",
                                         e.text));
    ExprScope at_begin = *scope_.begin_scope;
    at_begin.role = scope_.role;
    at_begin.strlen = scope_.strlen;
    ExprChecker inner(at_begin);
    if (auto r = inner.check(*c.inner, depth + 1); !r) return r;
    if (c.inner->type.is_bytes())
      return error_at(e.loc, fmt::format("'{}': a byte array cannot be captured at the begin; "
                                         "select it at the end instead",
                                         e.text));
    e.type = c.inner->type;
    return {};
  }

  // Operators.
  Result<void> visit(Expr& e, Unary& u, int depth) {
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
  void take_word_as_string(Expr& candidate) {
    auto* id = candidate.as<Identifier>();
    if (!id) return;
    int arg = 0;
    for (const auto& builtin : kBuiltins)
      if (id->name == builtin.name) return;
    if (is_arg_name(id->name, &arg)) return;
    if (all_tracepoints() && every_probe_has_field(id->name)) return;
    candidate.node = StringLiteral{id->name};
  }

  Result<void> visit(Expr& e, Binary& b, int depth) {
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

  static bool is_condition(const Type& t) { return t.is_bool() || t.is_integer(); }

  // `true || X` is true, `false && X` false, `true && X` and `false || X` are X: an optional
  // filter turned off by its parameter (`$only == "*" || comm == $only`) costs nothing per event.
  static void fold_constant_side(Expr& e, Binary& b) {
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

  // The exact value of an integer expression made of constants (literals, `-`, arithmetic;
  // parameters are literals by now), or nullopt. 128 bits hold every sum, difference, quotient
  // and shift of 64-bit values that the checks below let through; products are checked.
  using Exact = __int128;
  static constexpr Exact kMinInt64 = -(Exact{1} << 63);
  static constexpr Exact kMaxUint64 = (Exact{1} << 64) - 1;
  static bool in_64_bits(Exact v) { return v >= kMinInt64 && v <= kMaxUint64; }

  static std::optional<Exact> fold(const Expr& e) {
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

  static std::string exact_text(Exact v) {
    bool negative = v < 0;
    unsigned __int128 m = negative ? -static_cast<unsigned __int128>(v) : v;
    std::string digits;
    do {
      digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
      m /= 10;
    } while (m != 0);
    return (negative ? "-" : "") + digits;
  }

  // A constant expression gets the type of its value: `1 - 2` is -1 (signed), not 2^64 - 1 as
  // unsigned C arithmetic on two literals would make it. Values C cannot hold are errors.
  static Result<void> type_constant(Expr& e) {
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
  static Result<void> check_constant_operand(const Binary& b) {
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

  // `probe` is the index of the probe that fired, printed as its spec: a string compared with
  // it (`probe == "tracepoint:syscalls:sys_enter_write"`, or without the kind,
  // "syscalls:sys_enter_write") names one of the probes and becomes that index.
  Result<void> probe_name_as_index(const Expr& probe, Expr& name) {
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

  Result<void> check_comparable(const Expr& whole, const Expr& lhs, const Expr& rhs) {
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

  // Byte arrays are equal when all their bytes are: only two of the same length can be.
  static Result<void> check_bytes_comparable(const Expr& whole, const Expr& lhs, const Expr& rhs) {
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

  // What would let a string hold more: `strlen` sizes the strings bpfql reads (pointers,
  // __data_loc fields), never comm's 16 bytes or a char[N] field's N, and then `test` is false.
  static std::string capacity_hint(const Type& t, const std::string& test) {
    if (t.source == StringSource::Comm)
      return fmt::format("(`strlen` does not change comm's {} bytes), so {} can never be true",
                         t.str_size, test);
    if (t.source == StringSource::CharArray)
      return fmt::format("(`strlen` does not change a char[{}] field), so {} can never be true",
                         t.str_size, test);
    return "(raise `strlen` to read more)";
  }

  // A `char *` field is an address (only `const char *` is read as a string): say how to read it.
  std::string string_pointer_hint(const Expr& e) const {
    const auto* ref = e.as<FieldRef>();
    if (!ref || probes_.empty() || !probes_.front().format) return "";
    const TracepointField* field = probes_.front().format->field(ref->name);
    if (!field || field->c_type.find('*') == std::string::npos ||
        field->c_type.find("char") == std::string::npos)
      return "";
    return fmt::format(" (a '{}' address); read the string with 'str({})'", field->c_type, e.text);
  }

  Result<void> operand_error(const Binary& b, const char* wanted) {
    const Expr& bad = b.lhs->type.is_integer() || (std::string(wanted) == "conditions" &&
                                                   is_condition(b.lhs->type))
                          ? *b.rhs
                          : *b.lhs;
    return error_at(bad.loc, fmt::format("'{}' needs {}, but '{}' is a {}", operator_text(b.op),
                                         wanted, bad.text, bad.type.describe()));
  }

  Result<void> visit(Expr& e, InList& in, int depth) {
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

  Result<void> visit(Expr& e, Call& call, int depth) {
    if (is_aggregate_function(call.name))
      return error_at(e.loc, scope_.role == ExprRole::Filter
                                 ? fmt::format("aggregate '{}' cannot be used in 'where': filters run "
                                               "before events are aggregated", e.text)
                                 : fmt::format("aggregate '{}' must be a whole select item, not "
                                               "part of an expression", e.text));
    if (is_display_function(call.name))
      return error_at(e.loc, fmt::format("'{}()' formats a printed value: use it around a whole "
                                         "select or group_by item", call.name));
    for (auto& arg : call.args)
      if (auto r = check(*arg, depth + 1); !r) return r;
    if (call.name == "str") return check_str(e, call);
    if (call.name == "join") return check_join(e, call);
    if (call.name == "startswith" || call.name == "contains") return check_string_test(e, call);
    std::vector<std::string> all = kValueFunctions;
    all.insert(all.end(), kAggregateFunctions.begin(), kAggregateFunctions.end());
    all.insert(all.end(), kDisplayFunctions.begin(), kDisplayFunctions.end());
    return error_at(e.loc, fmt::format("unknown function '{}'", call.name) + did_you_mean(call.name, all));
  }

  Result<void> check_str(Expr& e, Call& call) {
    if (call.args.empty() || call.args.size() > 2)
      return error_at(e.loc, "str() takes a pointer and an optional length: str(PTR [, LEN])");
    int size = static_cast<int>(scope_.strlen);
    if (call.args.size() == 2) {
      auto* len = call.args[1]->as<IntLiteral>();
      if (!len || len->value < 2 || len->value > 256)
        return error_at(call.args[1]->loc, "the length of str() must be a number from 2 to 256");
      size = static_cast<int>(len->value);  // bytes read, the terminating NUL included (as bpftrace)
    }
    Expr& ptr = *call.args[0];
    bool explicit_length = call.args.size() == 2;
    if (ptr.type.is_string()) {  // already a string (a const char * field): str() sets its length
      ExprPtr inner = std::move(call.args[0]);
      e.node = std::move(inner->node);
      e.type = inner->type;
      bool pointer = e.type.source == StringSource::UserPtr || e.type.source == StringSource::KernelPtr ||
                     e.type.source == StringSource::DataLoc;
      if (pointer && explicit_length) e.type.str_size = size;  // `call` is gone: e.node was replaced
      return {};
    }
    if (!ptr.type.is_integer())
      return error_at(ptr.loc, fmt::format("str() needs a pointer, but '{}' is a {}", ptr.text,
                                           ptr.type.describe()));
    if (is_string_array_pointer(ptr.type))
      return error_at(ptr.loc, fmt::format("'{}' is an array of strings ('{}'), not a string: "
                                           "use join({}) for all of them, or str({}[N]) for one",
                                           ptr.text, pointer_spelling(*ptr.type.ktype), ptr.text,
                                           ptr.text));
    bool user = ptr.type.is_pointer() ? ptr.type.user_memory
                                      : std::all_of(probes_.begin(), probes_.end(),
                                                    reads_user_memory);
    e.type = Type::string(user ? StringSource::UserPtr : StringSource::KernelPtr, size);
    return {};
  }

  // join(ARGV [, "SEP"]): the strings of a NULL-terminated array of string pointers (execve's
  // argv), up to kJoinArgs of them, each up to `strlen` bytes, into one string.
  Result<void> check_join(Expr& e, Call& call) {
    if (call.args.empty() || call.args.size() > 2)
      return error_at(e.loc, "join() takes an array of string pointers and an optional one-byte "
                             "separator: join(args.argv [, \" \"])");
    const Expr& ptrs = *call.args[0];
    if (!is_string_array_pointer(ptrs.type))
      return error_at(ptrs.loc, fmt::format("join() needs an array of string pointers (a "
                                            "'char **', as execve's argv), but '{}' is a {}",
                                            ptrs.text, ptrs.type.is_pointer()
                                                           ? pointer_spelling(*ptrs.type.ktype)
                                                           : ptrs.type.describe()));
    if (call.args.size() == 2) {
      auto* sep = call.args[1]->as<StringLiteral>();
      if (!sep || sep->value.size() != 1)
        return error_at(call.args[1]->loc, "the separator of join() must be a one-byte string "
                                           "literal, such as \" \" or \",\"");
    }
    int size = 4;
    while (size < 4 * static_cast<int>(scope_.strlen) && size < kJoinMaxSize) size *= 2;
    e.type = Type::string(ptrs.type.user_memory ? StringSource::UserPtr : StringSource::KernelPtr,
                          size);
    return {};
  }

  Result<void> check_string_test(Expr& e, Call& call) {
    if (call.args.size() != 2)
      return error_at(e.loc, fmt::format("{}() takes two arguments: {}(STRING, \"text\")", call.name,
                                         call.name));
    if (!call.args[0]->type.is_string())
      return error_at(call.args[0]->loc, fmt::format("{}() needs a string, but '{}' is a {}", call.name,
                                                     call.args[0]->text, call.args[0]->type.describe()));
    auto* lit = call.args[1]->as<StringLiteral>();
    if (!lit)
      return error_at(call.args[1]->loc,
                      fmt::format("the second argument of {}() must be a string literal", call.name));
    if (lit->value.empty() && is_from_param(*call.args[1])) {
      // An optional filter: a string parameter left empty turns the test off (docs/language.md).
      e.node = BoolLiteral{true};
      e.type = Type::boolean();
      return {};
    }
    if (lit->value.empty())
      return error_at(call.args[1]->loc, fmt::format("{}() with an empty string is always true", call.name));
    if (static_cast<int>(lit->value.size()) >= call.args[0]->type.str_size)
      return error_at(call.args[1]->loc,
                      fmt::format("\"{}\" is longer than the {} bytes '{}' holds {}", lit->value,
                                  call.args[0]->type.str_size - 1, call.args[0]->text,
                                  capacity_hint(call.args[0]->type, call.name + "()")));
    e.type = Type::boolean();
    return {};
  }

  // Kernel memory through BTF: `->`, `.`, `[N]`, casts; and the conditional.
  Result<void> visit(Expr& e, Member& m, int depth) {
    if (auto r = check(*m.object, depth + 1); !r) return r;
    const Expr& object = *m.object;
    const Type& ot = object.type;
    const char* op = m.arrow ? "->" : ".";
    const KernelType* s = nullptr;
    if (m.arrow && ot.is_pointer()) {
      s = ot.ktype.get();
    } else if (!m.arrow && ot.is_place()) {
      s = ot.ktype.get();
    } else if (!m.arrow && ot.is_pointer() && is_struct(*ot.ktype)) {
      return error_at(e.loc, fmt::format("'{}' is a pointer to {}: write '{}->{}'", object.text,
                                         ot.ktype->spelling(), object.text, m.name));
    } else if (m.arrow && ot.is_place()) {
      return error_at(e.loc, fmt::format("'{}' is a {}, not a pointer: write '{}.{}'", object.text,
                                         ot.describe(), object.text, m.name));
    } else if (ot.is_integer()) {
      return error_at(e.loc, fmt::format("'{}' is an integer with no type to take '{}{}' of; if it "
                                         "is an address, cast it: '((struct NAME *){})->{}'",
                                         object.text, op, m.name, object.text, m.name));
    } else {
      return error_at(e.loc, fmt::format("'{}' is a {}, which has no members", object.text,
                                         ot.describe()));
    }
    if (!is_struct(*s))
      return error_at(e.loc, fmt::format("'{}' points to {}, which has no members{}", object.text,
                                         pointee_phrase(*s), void_hint(object, *s, m.name)));
    auto member = kernel_member(*scope_.catalog, *s, m.name, m.name_loc);
    if (!member) return std::unexpected(member.error());
    auto type = kernel_value_type(member->type, ot.user_memory, static_cast<int>(scope_.strlen), e);
    if (!type) return std::unexpected(type.error());
    m.offset = member->offset;
    e.type = *type;
    return {};
  }

  static bool is_struct(const KernelType& t) {
    return t.kind == KernelType::Kind::Struct || t.kind == KernelType::Kind::Union;
  }
  static std::string pointee_phrase(const KernelType& t) {
    if (t.kind == KernelType::Kind::Other && t.name == "void") return "void";
    return fmt::format("a {}", t.spelling());
  }
  static std::string void_hint(const Expr& object, const KernelType& t, const std::string& name) {
    if (t.kind != KernelType::Kind::Other || t.name != "void") return "";
    return fmt::format("; cast it to the struct it points to: '((struct NAME *){})->{}'",
                       object.text, name);
  }

  Result<void> visit(Expr& e, Index& ix, int depth) {
    if (auto r = check(*ix.index, depth + 1); !r) return r;
    auto at = fold(*ix.index);
    if (!at || *at < 0 || *at > 4096)
      return error_at(ix.index->loc, fmt::format("the index '{}' must be a constant from 0 to "
                                                 "4096",
                                                 ix.index->text));
    ix.at = static_cast<uint64_t>(*at);
    // A tracepoint array field (`args.args[0]` of raw_syscalls:sys_enter): in the record.
    if (auto* id = ix.object->as<Identifier>(); id && all_tracepoints() && every_probe_has_field(id->name))
      ix.object->node = FieldRef{id->name};
    if (auto* ref = ix.object->as<FieldRef>(); ref && all_tracepoints()) {
      const TracepointField* f = probes_.front().format->field(ref->name);
      if (f && (f->kind == FieldKind::Other || f->kind == FieldKind::ByteArray) &&
          f->c_type.ends_with("]"))
        return record_array_element(e, ix, *ref);
    }
    if (auto r = check(*ix.object, depth + 1); !r) return r;
    const Type& ot = ix.object->type;
    const KernelType* elem = nullptr;
    if (ot.is_pointer()) {
      elem = ot.ktype.get();
    } else if (ot.is_place() && ot.ktype->kind == KernelType::Kind::Array) {
      if (ix.at >= static_cast<uint64_t>(ot.ktype->array_len))
        return error_at(ix.index->loc, fmt::format("index {} is out of bounds: '{}' is a {} "
                                                   "(indexes 0..{})",
                                                   ix.at, ix.object->text, ot.describe(),
                                                   ot.ktype->array_len - 1));
      elem = ot.ktype->target.get();
    } else if (ot.is_string()) {
      return error_at(e.loc, fmt::format("'{}' is a string; bpfql does not index strings",
                                         ix.object->text));
    } else {
      return error_at(e.loc, fmt::format("'{}' is a {}, not an array or a typed pointer",
                                         ix.object->text, ot.describe()));
    }
    if (!elem || elem->size <= 0)
      return error_at(e.loc, fmt::format("'{}' points to {}, whose elements have no size",
                                         ix.object->text, elem ? pointee_phrase(*elem) : "void"));
    ix.elem_size = elem->size;
    auto type = kernel_value_type(*elem, ot.user_memory, static_cast<int>(scope_.strlen), e);
    if (!type) return std::unexpected(type.error());
    e.type = *type;
    return {};
  }

  // `args.ARR[N]`: an element of an integer array in the tracepoint record, bounds checked here.
  Result<void> record_array_element(Expr& e, Index& ix, const FieldRef& ref) {
    std::optional<Type> type;
    for (const auto& probe : probes_) {
      const TracepointField* f = probe.format->field(ref.name);
      if (!f)
        return error_at(ix.object->loc, fmt::format("unknown field '{}' in tracepoint {}:{}",
                                                     ref.name, probe.format->category,
                                                     probe.format->name));
      std::string_view c_type = f->c_type;
      size_t open = c_type.rfind('[');
      auto elem = kernel_type_from_spelling(c_type.substr(0, open));
      if (!elem || elem->kind != KernelType::Kind::Integer || elem->size <= 0 ||
          f->size % elem->size != 0)
        return error_at(e.loc, fmt::format("field '{}' of tracepoint {}:{} is a '{}'; only arrays "
                                           "of integers can be indexed",
                                           ref.name, probe.format->category, probe.format->name,
                                           f->c_type));
      uint64_t len = static_cast<uint64_t>(f->size / elem->size);
      if (ix.at >= len)
        return error_at(ix.index->loc, fmt::format("index {} is out of bounds: field '{}' is a "
                                                   "'{}' (indexes 0..{})",
                                                   ix.at, ref.name, f->c_type, len - 1));
      if (type && type->bits != elem->size * 8)
        return error_at(e.loc, fmt::format("field '{}' has different types in the probes of this "
                                           "query",
                                           ref.name));
      type = Type::integer(elem->size * 8, elem->is_signed && !elem->is_char);
      ix.elem_size = elem->size;
    }
    ix.object->type = Type::bytes(0);  // the array itself is never a value
    e.type = *type;
    return {};
  }

  Result<void> visit(Expr& e, Cast& c, int depth) {
    if (auto r = check(*c.operand, depth + 1); !r) return r;
    const Type& from = c.operand->type;
    if (auto width = fixed_width_integer(c.type_name)) {
      if (!from.is_integer() && !from.is_bool())
        return error_at(e.loc, fmt::format("cannot cast {} '{}' to {}", from.describe(),
                                           c.operand->text, c.type_name));
      e.type = Type::integer(width->size * 8, width->is_signed);
      return {};
    }
    // `(struct NAME *)X`: X is an address of that struct.
    auto spelled = kernel_type_from_spelling(c.type_name);
    if (!spelled || spelled->kind != KernelType::Kind::Pointer || !spelled->target)
      return error_at(e.loc, fmt::format("cannot cast to '{}'; casts are to u8..u64, s8..s64 or "
                                         "a struct pointer",
                                         c.type_name));
    if (!from.is_integer())
      return error_at(e.loc, fmt::format("cannot cast {} '{}' to '{}': only an address can be",
                                         from.describe(), c.operand->text, c.type_name));
    if (!scope_.catalog || !scope_.catalog->has_kernel_btf())
      return error_at(e.loc, fmt::format("'({})' needs the kernel's BTF (/sys/kernel/btf/vmlinux), "
                                         "which this kernel does not provide",
                                         c.type_name));
    const KernelType& pointee = *spelled->target;
    if (is_struct(pointee) && !scope_.catalog->kernel_struct(pointee.name))
      return error_at(e.loc, fmt::format("the kernel's BTF has no {}", pointee.spelling()));
    e.type = Type::integer(64, false);
    e.type.ktype = spelled->target;
    e.type.user_memory = from.is_pointer() ? from.user_memory
                                           : std::all_of(probes_.begin(), probes_.end(),
                                                         reads_user_memory);
    return {};
  }

  Result<void> visit(Expr& e, Conditional& c, int depth) {
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

  // Helpers.
  // A value that came from a `$param` (the checker put the parameter's value in its place).
  static bool is_from_param(const Expr& e) { return e.text.starts_with("$"); }

  bool all_tracepoints() const {
    return !probes_.empty() && std::all_of(probes_.begin(), probes_.end(), [](const ProbeRef& p) {
             return p.kind == ProbeKind::Tracepoint && p.format;
           });
  }
  bool every_probe_has_field(const std::string& name) const {
    return std::all_of(probes_.begin(), probes_.end(),
                       [&](const ProbeRef& p) { return p.format && p.format->field(name); });
  }
  const ProbeRef& first_non_tracepoint() const {
    return *std::find_if(probes_.begin(), probes_.end(),
                         [](const ProbeRef& p) { return p.kind != ProbeKind::Tracepoint; });
  }
  std::string probe_phrase() const {
    if (probes_.size() == 1) return fmt::format(" for probe {}", probes_[0].spec);
    return "";
  }

};

}  // namespace

bool is_aggregate_function(const std::string& name) {
  return std::find(kAggregateFunctions.begin(), kAggregateFunctions.end(), name) !=
         kAggregateFunctions.end();
}

bool is_display_function(const std::string& name) {
  return std::find(kDisplayFunctions.begin(), kDisplayFunctions.end(), name) !=
         kDisplayFunctions.end();
}

std::vector<std::string> names_in_scope(const ExprScope& scope) {
  std::vector<std::string> names;
  for (const auto& builtin : kBuiltins) names.push_back(builtin.name);
  for (int i = 0; i < 10; ++i) names.push_back(fmt::format("arg{}", i));
  std::set<std::string> fields;
  for (const auto& probe : *scope.probes)
    if (probe.format)
      for (const auto& f : probe.format->field_names()) fields.insert(f);
  names.insert(names.end(), fields.begin(), fields.end());
  if (scope.macros)
    for (const auto& [name, macro] : *scope.macros) names.push_back(name);
  return names;
}

bool is_builtin_name(std::string_view name) {
  return std::ranges::any_of(kBuiltins, [&](const auto& b) { return name == b.name; });
}

Result<void> check_expr(Expr& expr, const ExprScope& scope) {
  ExprChecker checker(scope);
  return checker.check(expr);
}

}  // namespace bpfql
