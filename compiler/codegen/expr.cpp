// Integer and boolean expressions → C. Every value carries the C type its text has, so casts are
// written exactly where C's own conversions would differ from the checker's types: arithmetic
// is 64-bit, and a comparison is signed when either side is.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/codegen/c_names.h"
#include "compiler/codegen/function.h"
#include "compiler/codegen/fusion.h"

namespace bpfql::codegen {
namespace {

std::string c_type(const Type& t) {
  if (t.is_bool()) return "u8";
  int bytes = t.bits <= 8 ? 1 : t.bits <= 16 ? 2 : t.bits <= 32 ? 4 : 8;
  return c_int_type(bytes, t.is_signed);
}

bool same_c_type(const Type& a, const Type& b) {
  if (a.is_bool() || b.is_bool()) return a.is_bool() && b.is_bool();
  return c_type(a) == c_type(b);
}

// `v` as a value of type `to`.
std::string cast(const CValue& v, const Type& to) {
  if (v.small_literal || same_c_type(v.type, to)) return v.text;
  return fmt::format("({}){}", c_type(to), v.text);
}

CValue literal(uint64_t value) {
  return {c_names::u64_literal(value), Type::integer(64, false), value <= 0x7fffffffu};
}

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::Lt || op == BinaryOp::Le || op == BinaryOp::Gt || op == BinaryOp::Ge ||
         op == BinaryOp::Eq || op == BinaryOp::Ne;
}

}  // namespace

Diagnostic FunctionGen::unsupported(const Expr& e, const std::string& what) const {
  return Diagnostic{e.loc, what};
}

const TracepointField* FunctionGen::format_field(const std::string& name) const {
  if (!env_.probe->format) return nullptr;
  for (const auto& f : env_.probe->format->fields)
    if (f.name == name) return &f;
  return nullptr;
}

std::string FunctionGen::record_field(const std::string& name) {
  reads_record_ = true;
  if (env_.raw_syscall != RawSyscall::None) {
    if (auto raw = raw_syscall_field(name)) return *raw;
    raw_unreadable_ = true;  // the text is not used (raw_syscall_ok)
  }
  return env_.ctx + "->" + name;
}

// Where a raw_syscalls raw tracepoint's program finds a record field (ProbeEnv::raw_syscall):
// the number at sys_enter and the return value at sys_exit are the tracepoint's own arguments;
// the number at sys_exit (the record's syscall_get_nr()) is regs->orig_ax; the argument a
// syscalls:sys_enter_NAME record holds at offset 16 + 8i is the i-th argument register of a
// 64-bit call (syscall_get_arguments()). Registers are read once, at their first use.
std::optional<std::string> FunctionGen::raw_syscall_field(const std::string& name) {
  const auto& regs = query_.syscall_regs;
  bool enter = env_.raw_syscall == RawSyscall::Enter;
  bool number = name == "id" || name == "__syscall_nr";
  if (enter && number) return env_.ctx + "->id";
  if (!enter && name == "ret") return env_.ctx + "->ret";
  if (!regs) return std::nullopt;
  if (!enter && number) {
    std::string read = raw_exit_number_read(*regs);
    if (once("local:bpfql_exit_nr")) line(read);
    return std::string("bpfql_exit_nr");
  }
  const TracepointField* f = format_field(name);
  if (!enter || !f || !env_.probe->format || env_.probe->format->category != "syscalls" ||
      name.starts_with("common_") || f->size != 8 || f->offset < 16 || (f->offset - 16) % 8 ||
      f->offset >= 16 + 8 * 6)
    return std::nullopt;
  int i = (f->offset - 16) / 8;
  std::string local = fmt::format("bpfql_arg{}", i);
  if (once("local:" + local))
    line(fmt::format("u64 {} = bpfql_syscall_reg({}->regs, {});  /* argument {} ({}) */", local,
                     env_.ctx, regs->args[static_cast<size_t>(i)], i + 1, name));
  return local;
}

// A helper's result kept in a local the first time it is needed (at function scope: every
// statement of the body is at the top level, so later statements see it).
std::string FunctionGen::cached(const std::string& name, const std::string& decl) {
  if (once("local:" + name)) line(decl);
  return name;
}

CValue FunctionGen::runtime_constant(uint64_t value, const std::string& source) {
  auto& constants = program_.constants;
  // One slot per value and source: the functions a wildcard generates stay the same text (and
  // are shared, sharing_key()), and slots last longer.
  auto same = std::find_if(constants.begin(), constants.end(), [&](const PlanConstant& c) {
    return c.value == value && c.source == source;
  });
  size_t slot = static_cast<size_t>(same - constants.begin());
  if (same == constants.end()) {
    if (constants.size() >= kRuntimeConstantSlots) return literal(value);
    constants.push_back(PlanConstant{value, source});
  }
  uint64_t marker = kRuntimeConstantMagic | slot;
  use_helper(program_.helpers, CHelper::RuntimeConstant);
  return CValue{fmt::format("BPFQL_CONST({:#x} /* {} */)", marker, c_names::comment_text(source)),
                Type::integer(64, false)};
}

Result<CValue> FunctionGen::typed_value(const Expr& e) {
  auto v = value(e);
  if (!v) return v;
  if (e.type.is_integer() && !v->small_literal && !same_c_type(v->type, e.type))
    return CValue{cast(*v, e.type), e.type, false};
  return v;
}

Result<std::string> FunctionGen::condition(const Expr& e) {
  auto v = value(e);
  if (!v) return std::unexpected(v.error());
  if (v->type.is_bool()) return v->text;
  return fmt::format("({} != 0)", v->text);
}

Result<CValue> FunctionGen::value(const Expr& e) {
  if (auto* lit = e.as<IntLiteral>()) {
    // A literal that looks like a marker is one too, so that the loader never mistakes it.
    if (lit->from_param || is_runtime_constant_marker(lit->value))
      return runtime_constant(lit->value, lit->from_param ? e.text : "a literal like a marker");
    return literal(lit->value);
  }
  if (auto* lit = e.as<BoolLiteral>()) return CValue{lit->value ? "1" : "0", Type::boolean(), true};
  if (auto* b = e.as<BuiltinRef>()) return builtin(e, *b);
  if (auto* f = e.as<FieldRef>()) return field(e, *f);
  if (auto* u = e.as<Unary>()) return unary(e, *u);
  if (auto* b = e.as<Binary>()) return binary(e, *b);
  if (auto* in = e.as<InList>()) return in_list(e, *in);
  if (auto* c = e.as<Call>()) return call(e, *c);
  if (auto* ix = e.as<Index>(); ix && ix->object->type.is_bytes() && ix->object->as<FieldRef>())
    return record_element(e, *ix);
  if (e.as<Member>() || e.as<Index>()) return memory_value(e);
  if (auto* c = e.as<Cast>()) return cast_value(e, *c);
  if (auto* c = e.as<Conditional>()) return conditional_value(e, *c);
  if (auto* c = e.as<Capture>()) return capture(e, *c);
  if (auto* v = e.as<EntryValue>()) return entry_value(e, *v);
  if (e.as<StringLiteral>())
    return std::unexpected(unsupported(e, fmt::format("string '{}' used as a number", e.text)));
  return std::unexpected(
      unsupported(e, fmt::format("'{}' was not resolved by the checker", e.text)));
}

Result<CValue> FunctionGen::builtin(const Expr& e, const BuiltinRef& b) {
  const ProbeKind kind = env_.probe->kind;
  const Type u32 = Type::integer(32, false);
  const Type u64 = Type::integer(64, false);
  switch (b.which) {
    case Builtin::Pid:
    case Builtin::Tid: {
      std::string v = cached("pid_tgid", "u64 pid_tgid = bpf_get_current_pid_tgid();");
      return CValue{b.which == Builtin::Pid ? "(u32)(" + v + " >> 32)" : "(u32)" + v, u32};
    }
    case Builtin::Uid:
    case Builtin::Gid: {
      std::string v = cached("uid_gid", "u64 uid_gid = bpf_get_current_uid_gid();");
      return CValue{b.which == Builtin::Uid ? "(u32)" + v : "(u32)(" + v + " >> 32)", u32};
    }
    case Builtin::Cpu:
      return CValue{cached("cpu", "u32 cpu = bpf_get_smp_processor_id();"), u32};
    case Builtin::Ts:
      return CValue{cached("ts", "u64 ts = bpf_ktime_get_ns();"), u64};
    case Builtin::Cgroup:
      return CValue{cached("cgroup_id", "u64 cgroup_id = bpf_get_current_cgroup_id();"), u64};
    case Builtin::Probe:
      if (kind == ProbeKind::Tracepoint) {  // one function for every probe (attach_cookie)
        uses_attach_cookie_ = true;
        return CValue{cached("probe_index", fmt::format("u32 probe_index = bpf_get_attach_cookie({});",
                                                        env_.ctx)),
                      u32};
      }
      return CValue{fmt::format("{}", env_.index), u32, true};
    case Builtin::Duration:
      if (env_.role != Role::Main || !query_.span)
        return std::unexpected(unsupported(e, "'duration' exists only at the end of a span"));
      return CValue{"duration", u64};
    case Builtin::Retval:
      if (kind != ProbeKind::Kretprobe && kind != ProbeKind::Uretprobe)
        return std::unexpected(
            unsupported(e, fmt::format("'retval' is not available on '{}'", env_.probe->spec)));
      return CValue{cached("retval", "u64 retval = PT_REGS_RC(ctx);"), u64};  // as fields are
    case Builtin::Arg:
      return argument(e, b.arg_index);
    case Builtin::Ppid:
      return emit_ppid(e);
    case Builtin::Curtask:
      return CValue{cached("curtask", "u64 curtask = bpf_get_current_task();"), u64};
    case Builtin::Depth:  // nest: true: the local the span's begin or end has set (span_nest.cpp)
      if (!query_.span || !query_.span->nest)
        return std::unexpected(unsupported(e, "'depth' exists only in a span with 'nest: true'"));
      return CValue{"depth", u32};
    case Builtin::Age:  // report: open: read off the open spans at each print, never in BPF
      return std::unexpected(unsupported(e, "'age' is computed at the print, not in the kernel"));
    case Builtin::Comm:
    case Builtin::Pcomm:
    case Builtin::Kstack:
    case Builtin::Ustack:
      break;
  }
  return std::unexpected(unsupported(e, fmt::format("'{}' is not a number", e.text)));
}

// argN: a register of a function probe, or a USDT argument as wide as the probe declares it.
Result<CValue> FunctionGen::argument(const Expr& e, int index) {
  const ProbeKind kind = env_.probe->kind;
  if (kind == ProbeKind::Usdt) {
    const auto& sizes = env_.probe->usdt_arg_sizes;
    if (index < 0 || index >= static_cast<int>(sizes.size()))
      return std::unexpected(
          unsupported(e, fmt::format("'{}' is not an argument of '{}'", e.text, env_.probe->spec)));
    int size = sizes[index];  // negative: signed
    int bytes = size < 0 ? -size : size;
    if (bytes != 1 && bytes != 2 && bytes != 4) bytes = 8;
    std::string name = fmt::format("usdt_arg{}", index);
    if (once("local:" + name)) {
      line(fmt::format("{} {} = 0;", c_int_type(bytes, size < 0), name));
      line(fmt::format("bpf_usdt_readarg({}, ctx, &{});", index + 1, name));  // 1-based
    }
    return CValue{name, Type::integer(bytes * 8, size < 0)};
  }
  if (kind == ProbeKind::Kprobe || kind == ProbeKind::Kretprobe || kind == ProbeKind::Uprobe ||
      kind == ProbeKind::Uretprobe) {
    if (index < 0 || index > 5)
      return std::unexpected(unsupported(e, "function probes offer arg0..arg5"));
    std::string name = fmt::format("arg{}", index);  // read once, as fields are (record_value)
    return CValue{cached(name, fmt::format("u64 {} = PT_REGS_PARM{}(ctx);", name, index + 1)),
                  Type::integer(64, false)};
  }
  return std::unexpected(
      unsupported(e, fmt::format("'{}' is not available on '{}'", e.text, env_.probe->spec)));
}

// The parent's tgid: current->real_parent->tgid, read at the offsets the running kernel's BTF
// gives (the checker looks them up). Never through kernel headers: theirs need not match.
Result<CValue> FunctionGen::emit_ppid(const Expr& e) {
  const auto& offsets = query_.task_offsets;
  if (!offsets)
    return std::unexpected(unsupported(e,
                                       "'ppid' needs the offsets of task_struct.real_parent and "
                                       "tgid, which the checker did not find"));
  if (auto r = emit_parent_task(e); !r) return std::unexpected(r.error());
  if (once("local:ppid")) {
    line("u32 ppid = 0;");
    line(
        fmt::format("bpf_probe_read_kernel(&ppid, sizeof(ppid), (void *)(parent + {}));  "
                    "/* ->tgid */",
                    offsets->tgid));
  }
  return CValue{"ppid", Type::integer(32, false)};
}

// `u64 parent`: current->real_parent, for ppid and pcomm (declared once per function).
Result<void> FunctionGen::emit_parent_task(const Expr& e) {
  const auto& offsets = query_.task_offsets;
  if (!offsets)
    return std::unexpected(unsupported(e, fmt::format("'{}' needs the offsets of task_struct's "
                                                      "members, which the checker did not find",
                                                      e.text)));
  constexpr int kMaxOffset = 1 << 16;  // task_struct is a few kilobytes
  if (offsets->real_parent < 0 || offsets->real_parent >= kMaxOffset || offsets->tgid < 0 ||
      offsets->tgid >= kMaxOffset || offsets->comm >= kMaxOffset)
    return std::unexpected(unsupported(e, fmt::format("implausible task_struct offsets for '{}'", e.text)));
  if (once("local:parent")) {
    line("u64 task = bpf_get_current_task();");
    line("u64 parent = 0;");
    line(
        fmt::format("bpf_probe_read_kernel(&parent, sizeof(parent), (void *)(task + {}));  "
                    "/* ->real_parent */",
                    offsets->real_parent));
  }
  return {};
}

Result<CValue> FunctionGen::field(const Expr& e, const FieldRef& f) {
  const TracepointField* tf = format_field(f.name);
  if (!tf || !env_.tracepoint)
    return std::unexpected(
        unsupported(e, fmt::format("probe '{}' has no field '{}'", env_.probe->spec, f.name)));
  if (!env_.tracepoint->readable.count(f.name) || tf->kind == FieldKind::Other ||
      tf->kind == FieldKind::CharArray || tf->kind == FieldKind::DataLoc ||
      tf->kind == FieldKind::ByteArray)
    return std::unexpected(unsupported(
        e, fmt::format("field '{}' of '{}' cannot be read as a number", f.name, env_.probe->spec)));
  if (e.type.is_string())
    return std::unexpected(unsupported(e, fmt::format("string '{}' used as a number", e.text)));
  // A pointer field is an unsigned address.
  if (tf->kind == FieldKind::Integer && tf->value_size) {  // a narrower type in a wider slot
    Type t = Type::integer(tf->value_size * 8, tf->value_signed);
    return record_value(f.name, t, fmt::format("({}){}", c_type(t), record_field(f.name)));
  }
  bool is_signed = tf->kind == FieldKind::Integer && tf->is_signed;
  Type t = Type::integer(tf->size * 8, is_signed);
  return record_value(f.name, t, record_field(f.name));
}

// A field of the record as a number, loaded into a local at its first use. Read again at each
// use, clang may keep `args + offset` in a register across helper calls and load through it,
// which the verifier refuses ("dereference of modified ctx ptr"); a local is read once, from
// the ctx pointer itself at a constant offset.
CValue FunctionGen::record_value(const std::string& name, const Type& t, const std::string& load) {
  std::string local = "args_" + name;
  return CValue{cached(local, fmt::format("{} {} = {};", c_type(t), local, load)), t};
}

Result<CValue> FunctionGen::unary(const Expr& e, const Unary& u) {
  switch (u.op) {
    case UnaryOp::Not: {
      auto c = condition(*u.operand);
      if (!c) return std::unexpected(c.error());
      return CValue{"(!" + *c + ")", Type::boolean()};
    }
    case UnaryOp::Neg: {
      // -(s64)9223372036854775808ULL would overflow in C: INT64_MIN is written as a constant.
      if (auto* lit = u.operand->as<IntLiteral>(); lit && lit->value == uint64_t{1} << 63)
        return CValue{"(" + c_names::s64_literal(INT64_MIN) + ")", Type::integer(64, true)};
      auto v = typed_value(*u.operand);
      if (!v) return v;
      Type s64 = Type::integer(64, true);
      return CValue{"(-" + cast(*v, s64) + ")", s64};
    }
    case UnaryOp::BitNot: {
      auto v = typed_value(*u.operand);
      if (!v) return v;
      Type t = e.type.is_integer() ? e.type : v->type;
      Type wide = Type::integer(64, t.is_signed);
      std::string text = "(~" + cast(CValue{v->text, v->type, false}, wide) + ")";
      if (t.bits < 64) text = fmt::format("(({}){})", c_type(t), text);
      return CValue{text, t};
    }
  }
  return std::unexpected(unsupported(e, "unknown operator"));
}

Result<CValue> FunctionGen::binary(const Expr& e, const Binary& b) {
  if (is_comparison(b.op)) return compare(b.op, *b.lhs, *b.rhs);
  if (b.op == BinaryOp::And || b.op == BinaryOp::Or) {
    auto l = condition(*b.lhs);
    if (!l) return std::unexpected(l.error());
    auto r = condition(*b.rhs);
    if (!r) return std::unexpected(r.error());
    return CValue{fmt::format("({} {} {})", *l, operator_text(b.op), *r), Type::boolean()};
  }
  auto l = typed_value(*b.lhs);
  if (!l) return l;
  auto r = typed_value(*b.rhs);
  if (!r) return r;
  if (e.type.is_bool())  // & | ^ of two conditions
    return CValue{fmt::format("({} {} {})", l->text, operator_text(b.op), r->text), Type::boolean()};

  const Type t = e.type;
  const Type wide = Type::integer(64, t.is_signed);
  // The left operand carries the type of a shift, and of two constants.
  bool shift = b.op == BinaryOp::Shl || b.op == BinaryOp::Shr;
  // A small literal is an int in C: `1 << 40` must be `(u64)1 << 40`, even where the literal's
  // type (u64) is already the type wanted and cast() would leave it alone.
  std::string lt = l->small_literal && (shift || r->small_literal)
                       ? fmt::format("({}){}", c_type(wide), l->text)
                       : cast(*l, wide);
  std::string rt = cast(*r, wide);
  std::string text;
  if ((b.op == BinaryOp::Div || b.op == BinaryOp::Mod) && t.is_signed) {
    CHelper helper = b.op == BinaryOp::Div ? CHelper::SDiv : CHelper::SMod;
    use_helper(program_.helpers, helper);
    text = fmt::format("{}({}, {})", b.op == BinaryOp::Div ? "bpfql_sdiv" : "bpfql_smod", lt, rt);
  } else {
    text = fmt::format("({} {} {})", lt, operator_text(b.op), rt);
  }
  if (t.bits < 64) text = fmt::format("(({}){})", c_type(t), text);
  return CValue{text, t};
}

Result<CValue> FunctionGen::compare(BinaryOp op, const Expr& lhs, const Expr& rhs) {
  if (lhs.type.is_string() || rhs.type.is_string()) {
    if (op != BinaryOp::Eq && op != BinaryOp::Ne)
      return std::unexpected(unsupported(lhs, "strings support only == and !="));
    auto eq = string_equal(lhs, rhs);
    if (!eq) return std::unexpected(eq.error());
    return CValue{op == BinaryOp::Eq ? *eq : "(!" + *eq + ")", Type::boolean()};
  }
  if (lhs.type.is_bytes() || rhs.type.is_bytes()) {
    if (op != BinaryOp::Eq && op != BinaryOp::Ne)
      return std::unexpected(unsupported(lhs, "byte arrays support only == and !="));
    auto eq = bytes_equal(lhs, rhs);
    if (!eq) return std::unexpected(eq.error());
    return CValue{op == BinaryOp::Eq ? *eq : "(!" + *eq + ")", Type::boolean()};
  }
  auto l = typed_value(lhs);
  if (!l) return l;
  auto r = typed_value(rhs);
  if (!r) return r;
  std::string lt = l->text, rt = r->text;
  // Signed when either side is: the unsigned side is read as s64. Otherwise C's conversions of
  // unsigned values (zero extension) already compare correctly.
  bool is_signed = (lhs.type.is_integer() && lhs.type.is_signed) ||
                   (rhs.type.is_integer() && rhs.type.is_signed);
  if (is_signed) {
    Type s64 = Type::integer(64, true);
    if (!l->type.is_signed) lt = cast(*l, s64);
    if (!r->type.is_signed) rt = cast(*r, s64);
  }
  return CValue{fmt::format("({} {} {})", lt, operator_text(op), rt), Type::boolean()};
}

Result<CValue> FunctionGen::in_list(const Expr&, const InList& in) {
  if (in.items.empty()) return CValue{"0", Type::boolean(), true};
  if (in.value->type.is_string() && in.items.size() > 1) {
    auto r = string_in_list(*in.value, in.items);
    if (!r) return std::unexpected(r.error());
    return CValue{*r, Type::boolean()};
  }
  std::string text;
  for (const auto& item : in.items) {
    auto eq = compare(BinaryOp::Eq, *in.value, *item);
    if (!eq) return eq;
    text += (text.empty() ? "" : " || ") + eq->text;
  }
  return CValue{in.items.size() == 1 ? text : "(" + text + ")", Type::boolean()};
}

Result<CValue> FunctionGen::call(const Expr& e, const Call& c) {
  if ((c.name == "startswith" || c.name == "contains") && c.args.size() == 2) {
    auto* lit = c.args[1]->as<StringLiteral>();
    if (!lit) return std::unexpected(unsupported(e, c.name + "() needs a string literal"));
    auto r = c.name == "startswith" ? string_startswith(*c.args[0], lit->value)
                                    : string_contains(*c.args[0], lit->value);
    if (!r) return std::unexpected(r.error());
    return CValue{*r, Type::boolean()};
  }
  return std::unexpected(
      unsupported(e, fmt::format("'{}' cannot be computed in the kernel", e.text)));
}

}  // namespace bpfql::codegen
