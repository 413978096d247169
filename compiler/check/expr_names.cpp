// Names in expressions: builtins (pid, comm, curtask, ...), arg0..arg9, retval, the file's
// macros, tracepoint fields (bare or as args.NAME) and `begin.EXPR` at a span's end. Also the
// names in scope for did-you-mean.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "compiler/check/expr_checker.h"
#include "compiler/check/shared_names.h"
#include "compiler/check/kernel_types.h"
#include "compiler/syntax/parser.h"

namespace bpfql::expr_check {
namespace {

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
    {"age", Builtin::Age},       {"depth", Builtin::Depth},
};

// `age` and `depth` are builtins only in the span queries that give them; elsewhere the names
// stay free (fields such as writeback:writeback_queue_io's `age`, macros).
bool builtin_in_scope(Builtin which, const ExprScope& scope) {
  if (which == Builtin::Age) return scope.span_open;
  if (which == Builtin::Depth) return scope.span_nest;
  return true;
}

bool is_syscall_tracepoint(const ProbeRef& probe) {
  return probe.kind == ProbeKind::Tracepoint && probe.format && probe.format->category == "syscalls";
}

// A pointer field remembers what its format says it points to (`struct sock *`, argv's
// `const char *const *`), in user memory on syscall tracepoints: `->` and `[N]` read through it.
void add_pointee(Type& t, const ProbeRef& probe, const TracepointField& field) {
  if (!t.is_integer() || field.c_type.find('*') == std::string::npos) return;
  auto spelled = kernel_type_from_spelling(field.c_type);
  if (!spelled || spelled->kind != KernelType::Kind::Pointer || !spelled->target) return;
  t.ktype = spelled->target;
  t.user_memory = is_syscall_tracepoint(probe);
}

}  // namespace

bool is_arg_name(const std::string& name, int* index) {
  if (name.size() != 4 || name.compare(0, 3, "arg") != 0 || name[3] < '0' || name[3] > '9')
    return false;
  *index = name[3] - '0';
  return true;
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

Result<void> ExprChecker::visit(Expr& e, Identifier& id, int depth) {
  std::string name = id.name;
  // `age` is a builtin only in a span with `report: open`; elsewhere the name stays free (a
  // field of writeback:writeback_queue_io and damon:* is called age).
  for (const auto& builtin : kBuiltins)
    if (name == builtin.name && builtin_in_scope(builtin.which, scope_))
      return resolve_builtin(e, builtin.which, 0);
  int arg = 0;
  if (is_arg_name(name, &arg)) return resolve_builtin(e, Builtin::Arg, arg);
  if (scope_.macros)
    if (auto macro = scope_.macros->find(name); macro != scope_.macros->end()) {
      if (all_tracepoints() && every_probe_has_field(name)) {
        Diagnostic both{e.loc, fmt::format("'{}' is both a macro (defined at {}:{}) and a field "
                                           "of this probe; write args.{} for the field, or "
                                           "rename the macro",
                                           name, macro->second.name_loc.file,
                                           macro->second.name_loc.line, name)};
        both.notes.push_back({macro->second.name_loc, fmt::format("macro '{}' is defined here", name)});
        return std::unexpected(std::move(both));
      }
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
  if (name == "age") return resolve_builtin(e, Builtin::Age, 0);  // says where it exists
  if (name == "depth") return resolve_builtin(e, Builtin::Depth, 0);
  return error_at(e.loc, fmt::format("unknown name '{}'{}", name, probe_phrase()) +
                             did_you_mean(name, names_in_scope(scope_)));
}

// A macro's expression takes the place of its name: parsed where it is defined, checked here
// (on this query's probes). An error inside it is reported at the use, as a compiler reports one
// in a macro expansion, with a note at the place in the definition (one per macro level).
Result<void> ExprChecker::expand_macro(Expr& e, const MacroDef& macro, int depth) {
  auto at_use = [&](Diagnostic d) {
    return std::unexpected(in_definition(std::move(d), e.loc, "macro", macro.name));
  };
  if (std::ranges::find(expanding_, macro.name) != expanding_.end()) {
    std::string chain;
    for (const auto& m : expanding_) chain += m + " -> ";
    Diagnostic loop{e.loc, fmt::format("macro '{}' uses itself ({}{})", macro.name, chain,
                                       macro.name)};
    loop.notes.push_back({macro.name_loc, fmt::format("macro '{}' is defined here", macro.name)});
    return std::unexpected(std::move(loop));
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

Result<void> ExprChecker::visit(Expr& e, FieldRef& ref, int) {
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

Result<Type> ExprChecker::type_of_field(const Expr& e, const ProbeRef& probe, const TracepointField& field) {
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

Result<void> ExprChecker::resolve_builtin(Expr& e, Builtin which, int arg_index) {
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
      if (scope_.span_open && scope_.role != ExprRole::Filter)
        return error_at(e.loc, "a span with 'report: open' lists spans that have not ended, so "
                               "they have no duration; 'age' is the time since their begin "
                               "(max(age) as oldest)");
      e.type = Type::integer(64, false);
      break;
    case Builtin::Age:
      if (!scope_.span_open)
        return error_at(e.loc, "'age' (the time an open span has been open, at a print) exists "
                               "only in a span with 'report: open'");
      if (scope_.role != ExprRole::AggregateArg)
        return error_at(e.loc, "'age' is measured at each print, over the spans still open: "
                               "aggregate it (max(age) as oldest, hist(age))");
      e.type = Type::integer(64, false);
      break;
    case Builtin::Depth:
      if (!scope_.span_nest)
        return error_at(e.loc, "'depth' (how many spans of the thread are open around this one) "
                               "exists only in a span with 'nest: true'");
      e.type = Type::integer(32, false);
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

Result<void> ExprChecker::resolve_retval(Expr& e) {
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

Result<void> ExprChecker::resolve_arg(Expr& e, int index) {
  std::optional<Type> type;
  for (const auto& probe : probes_) {
    Type arg_type;
    switch (probe.kind) {
      case ProbeKind::Kretprobe:
      case ProbeKind::Uretprobe:
        return error_at(e.loc, fmt::format(
                                   "'{}' does not exist at the return probe '{}': the argument "
                                   "registers are overwritten by the time the function returns; "
                                   "did you mean 'entry.{}' (the value it had at the call's "
                                   "entry)?",
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
Result<void> ExprChecker::visit(Expr& e, Capture& c, int depth) {
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

}  // namespace bpfql::expr_check

namespace bpfql {

std::vector<std::string> names_in_scope(const ExprScope& scope) {
  std::vector<std::string> names;
  for (const auto& builtin : expr_check::kBuiltins)
    if (expr_check::builtin_in_scope(builtin.which, scope)) names.push_back(builtin.name);
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
  // `age` (report: open only) and `depth` (nest: true only) leave the names free elsewhere.
  return std::ranges::any_of(expr_check::kBuiltins, [&](const auto& b) {
    return name == b.name && b.which != Builtin::Age && b.which != Builtin::Depth;
  });
}

}  // namespace bpfql
