// Strings → C. A string is read at most once per event, into its home (a key or event member
// when it is one, else a buffer), or compared in place when it is a char[] in the tracepoint
// record. Comparisons with literals are unrolled byte tests (bpf_strncmp against a literal is
// rejected by the verifier here); the literal's bytes appear only as escaped char constants.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/codegen/c_names.h"
#include "compiler/codegen/function.h"

namespace bpfql::codegen {
namespace {

// A structural name for an integer expression (the pointer of str()).
std::string int_canon(const Expr& e) {
  if (auto* lit = e.as<IntLiteral>()) return fmt::format("{}", lit->value);
  if (auto* lit = e.as<BoolLiteral>()) return lit->value ? "true" : "false";
  if (auto* b = e.as<BuiltinRef>())
    return fmt::format("builtin{}.{}", static_cast<int>(b->which), b->arg_index);
  if (auto* f = e.as<FieldRef>()) return "args." + f->name;
  if (auto* u = e.as<Unary>())
    return fmt::format("u{}({})", static_cast<int>(u->op), int_canon(*u->operand));
  if (auto* b = e.as<Binary>())
    return fmt::format("b{}({},{})", static_cast<int>(b->op), int_canon(*b->lhs),
                       int_canon(*b->rhs));
  return "?" + e.text;
}

void add_use(const Expr& s, bool indexed, std::vector<StringUse>& out) {
  std::string canon = string_canon(s);
  if (canon.empty()) return;
  auto it =
      std::find_if(out.begin(), out.end(), [&](const StringUse& u) { return u.canon == canon; });
  if (it == out.end()) {
    out.push_back(
        StringUse{canon, &s, static_cast<uint32_t>(std::max(s.type.str_size, 1)), indexed});
  } else {
    it->indexed = it->indexed || indexed;
  }
}

bool is_literal(const Expr& e) { return e.as<StringLiteral>() != nullptr; }

// The bytes of `s` (from index `base`) against `bytes`, folded into one int that is 0 exactly
// when all are equal: (s[0] ^ 'a') | (s[1] ^ 'b') | s[2]. One test of the result, not one branch
// per byte: LLVM turns a chain of cheap byte tests into as many materialized booleans, and the
// verifier then walks 2^n paths.
std::string byte_diff(const std::string& s, const std::string& base, const std::string& bytes,
                      bool with_nul) {
  auto at = [&](size_t i) {
    return base.empty()
               ? fmt::format("{}[{}]", s, i)
               : (i ? fmt::format("{}[{} + {}]", s, base, i) : fmt::format("{}[{}]", s, base));
  };
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i)
    out += (out.empty() ? "" : " | ") +
           fmt::format("({} ^ {})", at(i),
                       c_names::char_literal(static_cast<unsigned char>(bytes[i])));
  if (with_nul) out += (out.empty() ? "" : " | ") + at(bytes.size());
  bool one_term = bytes.size() + (with_nul ? 1 : 0) == 1;
  if (one_term && out.front() == '(') out = out.substr(1, out.size() - 2);
  return out;  // unparenthesized: the caller wraps it
}

// `bytes` compared with the string at `s` (8-byte aligned) a word at a time: 8-byte words, then
// 4, 2 and 1 bytes to end exactly after the last byte, each loaded at its natural alignment.
// Zero exactly when all bytes are equal. The words are the literal's bytes, little-endian.
std::string word_diff(const std::string& s, const std::string& bytes) {
  std::string out;
  size_t at = 0;
  for (size_t width : {8, 4, 2, 1}) {
    while (bytes.size() - at >= width) {
      uint64_t word = 0;
      for (size_t i = 0; i < width; ++i)
        word |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
      std::string load = width == 1 ? fmt::format("(u8){}[{}]", s, at)
                                    : fmt::format("*(u{} *)&{}[{}]", width * 8, s, at);
      std::string term =
          fmt::format("({} ^ 0x{:0{}x}{})", load, word, width * 2, width == 8 ? "ULL" : "");
      out += (out.empty() ? "" : " | ") + term;
      at += width;
    }
  }
  bool one_term = out.find(" | ") == std::string::npos;
  if (one_term && out.front() == '(') out = out.substr(1, out.size() - 2);
  return out;
}

}  // namespace

std::string string_canon(const Expr& e) {
  if (is_literal(e)) return "";
  if (auto* b = e.as<BuiltinRef>(); b && b->which == Builtin::Comm) return "comm";
  if (auto* b = e.as<BuiltinRef>(); b && b->which == Builtin::Pcomm) return "pcomm";
  if (auto* f = e.as<FieldRef>()) return "args." + f->name;
  if (auto* c = e.as<Call>(); c && c->name == "str" && !c->args.empty())
    return fmt::format("str({},{})", int_canon(*c->args[0]), e.type.str_size);
  if (auto* c = e.as<Call>(); c && c->name == "join" && !c->args.empty())
    return fmt::format("join({})", c->args.size() == 2 ? e.text : c->args[0]->text);
  if (e.as<Member>() || e.as<Index>()) return "mem:" + e.text;
  if (auto* c = e.as<Capture>()) return "begin." + string_canon(*c->inner);
  return "?" + e.text;
}

void collect_strings(const Expr& e, std::vector<StringUse>& out) {
  if (e.type.is_string()) {
    add_use(e, false, out);
    return;  // the pointer of str() is an integer: nothing more to read
  }
  if (auto* b = e.as<Binary>()) {
    bool both = b->lhs->type.is_string() && b->rhs->type.is_string() && !is_literal(*b->lhs) &&
                !is_literal(*b->rhs);
    if (both) {
      add_use(*b->lhs, true, out);
      add_use(*b->rhs, true, out);
    }
    collect_strings(*b->lhs, out);
    collect_strings(*b->rhs, out);
  } else if (auto* u = e.as<Unary>()) {
    collect_strings(*u->operand, out);
  } else if (auto* in = e.as<InList>()) {
    for (const auto& item : in->items) {
      if (in->value->type.is_string() && !is_literal(*in->value) && !is_literal(*item)) {
        add_use(*in->value, true, out);
        add_use(*item, true, out);
      }
      collect_strings(*item, out);
    }
    collect_strings(*in->value, out);
  } else if (auto* c = e.as<Call>()) {
    if (c->name == "contains" && !c->args.empty()) add_use(*c->args[0], true, out);
    for (const auto& arg : c->args) collect_strings(*arg, out);
  } else if (auto* c = e.as<Conditional>()) {
    collect_strings(*c->cond, out);
    collect_strings(*c->then, out);
    collect_strings(*c->otherwise, out);
  } else if (auto* c = e.as<Cast>()) {
    collect_strings(*c->operand, out);
  }
}

Result<CString> FunctionGen::string_value(const Expr& e, bool indexed) {
  std::string canon = string_canon(e);
  const auto& homes = layout_.strings[static_cast<int>(env_.role)];
  auto it = homes.find(canon);
  if (canon.empty() || it == homes.end())
    return std::unexpected(
        unsupported(e, fmt::format("no storage was planned for string '{}'", e.text)));
  const StringHome& home = it->second;
  if (home.in_ctx) {
    const auto* f = e.as<FieldRef>();
    if (indexed || !f || !env_.tracepoint || !env_.tracepoint->readable.count(f->name))
      return std::unexpected(
          unsupported(e, fmt::format("string '{}' cannot be read in place", e.text)));
    reads_record_ = true;
    if (env_.raw_syscall != RawSyscall::None) raw_unreadable_ = true;  // no record to read in
  }
  if (!home.in_ctx && !home.in_span && once("read:" + canon)) {
    if (auto r = read_string(e, home); !r) return std::unexpected(r.error());
  }
  bool aligned = true;  // buffers and members are; a field of the record is where it is
  if (home.in_ctx) aligned = format_field(e.as<FieldRef>()->name)->offset % 8 == 0;
  return CString{home.lvalue, home.size, aligned};
}

Result<void> FunctionGen::read_string(const Expr& e, const StringHome& home) {
  if (home.in_event) {  // report: flow: a begin row's event
    ensure_event_zeroed();
  } else if (home.member && env_.role == Role::SpanBegin) {
    ensure_span_value_zeroed();
  } else if (home.member) {
    if (query_.streaming())
      ensure_event_zeroed();
    else
      ensure_key_zeroed();
  } else if (layout_.stack_buffers[static_cast<int>(env_.role)].count(home.lvalue)) {
    line(fmt::format("char {}[{}] __attribute__((aligned(8)));", home.lvalue, home.size));
  } else {
    ensure_scratch();
  }
  const std::string& dest = home.lvalue;
  if (auto* c = e.as<Capture>()) {  // stored at the begin: copied from the span value
    const CMember* m = capture_member(*c);
    if (!m) return std::unexpected(unsupported(e, fmt::format("'{}' was not captured", e.text)));
    line(fmt::format("__builtin_memcpy({}, sp->{}, {});", dest, m->name, std::min(home.size, m->size)));
    return {};
  }
  if (auto* b = e.as<BuiltinRef>(); b && b->which == Builtin::Comm) {
    line(fmt::format("bpf_get_current_comm({0}, sizeof({0}));", dest));
    return {};
  }
  if (auto* b = e.as<BuiltinRef>(); b && b->which == Builtin::Pcomm) {
    if (auto r = emit_parent_task(e); !r) return r;
    if (query_.task_offsets->comm < 0)
      return std::unexpected(unsupported(e, "'pcomm' needs the offset of task_struct.comm"));
    line(fmt::format("bpf_probe_read_kernel_str({0}, sizeof({0}), (void *)(parent + {1}));  "
                     "/* ->real_parent->comm */",
                     dest, query_.task_offsets->comm));
    return {};
  }
  if (auto* f = e.as<FieldRef>()) return read_field_string(e, *f, dest, home.size);
  if (e.as<Member>() || e.as<Index>()) return read_memory_string(e, dest);
  if (auto* c = e.as<Call>(); c && c->name == "join" && !c->args.empty())
    return read_joined(e, *c, dest, home.size);
  if (auto* c = e.as<Call>(); c && c->name == "str" && !c->args.empty()) {
    auto ptr = typed_value(*c->args[0]);
    if (!ptr) return std::unexpected(ptr.error());
    std::string address =
        ptr->type.bits == 64 && !ptr->small_literal ? ptr->text : "(u64)" + ptr->text;
    const char* fn = e.type.source == StringSource::KernelPtr ? "bpf_probe_read_kernel_str"
                                                              : "bpf_probe_read_user_str";
    line(fmt::format("{0}({1}, sizeof({1}), (void *){2});", fn, dest, address));
    return {};
  }
  return std::unexpected(unsupported(e, fmt::format("cannot read string '{}'", e.text)));
}

// A string field of the tracepoint record: a char[] is copied, a __data_loc or a pointer read.
Result<void> FunctionGen::read_field_string(const Expr& e, const FieldRef& f,
                                            const std::string& dest, uint32_t size) {
  const TracepointField* tf = format_field(f.name);
  if (!tf || !env_.tracepoint || !env_.tracepoint->readable.count(f.name))
    return std::unexpected(unsupported(
        e, fmt::format("probe '{}' has no readable field '{}'", env_.probe->spec, f.name)));
  std::string src = record_field(f.name);
  switch (tf->kind) {
    case FieldKind::CharArray: {
      uint32_t n = std::min<uint32_t>(size, static_cast<uint32_t>(tf->size));
      // Small arrays copy with plain loads from the record, then every byte after the string's
      // NUL is zeroed: the kernel leaves stale bytes there (block's rwbs "WS\0" + leftovers), and
      // a key holding them would split one string into many groups. Large ones with one helper
      // call that stops at the NUL (dest is zeroed, or only read up to the NUL).
      if (n <= 64) {
        line(fmt::format("__builtin_memcpy({}, {}, {});", dest, src, n));
        std::string ended = fresh("ended");
        line(fmt::format("u8 {} = 0;", ended));
        line(fmt::format("for (u32 i = 0; i < {}; i++) {{", n));
        line(fmt::format("  {} |= {}[i] == 0;", ended, dest));
        line(fmt::format("  {}[i] &= (u8)({} - 1);", dest, ended));
        line("}");
      } else {
        line(fmt::format("bpf_probe_read_kernel_str({}, {}, {});", dest, n, src));
      }
      return {};
    }
    case FieldKind::DataLoc:  // the low 16 bits are the offset of the bytes in the record
      line(fmt::format("bpf_probe_read_kernel_str({0}, sizeof({0}), (char *){1} + ({2} & 0xFFFF));",
                       dest, env_.ctx, src));
      return {};
    case FieldKind::CharPtr: {
      const char* fn = e.type.source == StringSource::UserPtr ? "bpf_probe_read_user_str"
                                                              : "bpf_probe_read_kernel_str";
      line(fmt::format("{0}({1}, sizeof({1}), (void *){2});", fn, dest, src));
      return {};
    }
    default:
      break;
  }
  return std::unexpected(unsupported(e, fmt::format("field '{}' is not a string", f.name)));
}

// An int that is 0 exactly when the string `s` holds `bytes`; "1" when it cannot hold them.
// `in_list`: the low byte alone says whether it is 0.
Result<std::string> FunctionGen::literal_difference(const Expr& s, const std::string& bytes,
                                                    bool in_list) {
  auto str = string_value(s, false);
  if (!str) return std::unexpected(str.error());
  if (bytes.size() + 1 > str->size) return std::string("1");
  if (!in_list && str->aligned) return "(" + word_diff(str->lvalue, bytes + '\0') + ")";
  return "(" + byte_diff(str->lvalue, "", bytes, true) + ")";
}

// `value in (items)` for strings, without a branch per item: each item contributes 1 when it
// differs, and the value is in the list unless all of them do.
Result<std::string> FunctionGen::string_in_list(const Expr& value,
                                                const std::vector<ExprPtr>& items) {
  std::string all_differ;
  for (const auto& item : items) {
    std::string differs;
    if (auto* lit = item->as<StringLiteral>(); lit && !value.as<StringLiteral>()) {
      auto diff = literal_difference(value, lit->value, true);
      if (!diff) return diff;
      differs = *diff == "1" ? "1" : fmt::format("(((u8){} + 255) >> 8)", *diff);
    } else {
      auto eq = string_equal(value, *item);
      if (!eq) return eq;
      differs = fmt::format("({} ^ 1)", *eq);
    }
    all_differ += (all_differ.empty() ? "" : " & ") + differs;
  }
  return "((" + all_differ + ") == 0)";
}

Result<std::string> FunctionGen::string_equal(const Expr& lhs, const Expr& rhs) {
  const auto* llit = lhs.as<StringLiteral>();
  const auto* rlit = rhs.as<StringLiteral>();
  if (llit && rlit) return std::string(llit->value == rlit->value ? "1" : "0");
  if (!lhs.type.is_string() || !rhs.type.is_string())
    return std::unexpected(unsupported(lhs, "a string compares only with a string"));
  if (llit || rlit) {
    auto diff = literal_difference(llit ? rhs : lhs, llit ? llit->value : rlit->value, false);
    if (!diff) return diff;
    return "(" + *diff + " == 0)";
  }
  auto a = string_value(lhs, true);
  if (!a) return std::unexpected(a.error());
  auto b = string_value(rhs, true);
  if (!b) return std::unexpected(b.error());
  std::string same = fresh("same");
  line(fmt::format("u8 {} = 1;", same));
  line(fmt::format("for (u32 i = 0; i < {}; i++) {{", std::min(a->size, b->size)));
  line(fmt::format("  if ({}[i] != {}[i]) {{", a->lvalue, b->lvalue));
  line(fmt::format("    {} = 0;", same));
  line("    break;");
  line("  }");
  line(fmt::format("  if ({}[i] == 0)", a->lvalue));
  line("    break;");
  line("}");
  return same;
}

Result<std::string> FunctionGen::string_startswith(const Expr& s, const std::string& prefix) {
  if (prefix.empty()) return std::string("1");
  auto str = string_value(s, false);
  if (!str) return std::unexpected(str.error());
  if (prefix.size() > str->size) return std::string("0");
  std::string diff =
      str->aligned ? word_diff(str->lvalue, prefix) : byte_diff(str->lvalue, "", prefix, false);
  return "((" + diff + ") == 0)";
}

Result<std::string> FunctionGen::string_contains(const Expr& s, const std::string& needle) {
  if (needle.empty()) return std::string("1");
  auto str = string_value(s, true);
  if (!str) return std::unexpected(str.error());
  if (needle.size() > str->size) return std::string("0");
  std::string found = fresh("found");
  line(fmt::format("u8 {} = 0;", found));
  line(fmt::format("for (u32 i = 0; i < {}; i++) {{", str->size - needle.size() + 1));
  line(fmt::format("  if ({}[i] == 0)", str->lvalue));
  line("    break;");
  line(fmt::format("  if (({}) == 0) {{", byte_diff(str->lvalue, "i", needle, false)));
  line(fmt::format("    {} = 1;", found));
  line("    break;");
  line("  }");
  line("}");
  return found;
}

Result<void> FunctionGen::store_literal(const std::string& lvalue, uint32_t size,
                                        const std::string& bytes) {
  // The member was zeroed: the bytes after the literal are its NUL terminator.
  for (size_t i = 0; i < bytes.size() && i + 1 < size; ++i)
    line(fmt::format("{}[{}] = {};", lvalue, i, c_names::char_literal(bytes[i])));
  return {};
}

}  // namespace bpfql::codegen
