// Reads through BTF offsets → C. A member or element is read once per event into a local with
// one bpf_probe_read_kernel (or _user) at an address the checker's offsets make constant past
// its base pointer: `curtask->real_parent->tgid` is two reads. Offsets come from the running
// kernel's BTF at check time, so no CO-RE relocation is needed (the program is compiled for,
// and cached per, the kernel it runs on: the offsets are literals in the C the cache key holds).
#include <fmt/format.h>

#include "compiler/codegen/c_names.h"
#include "compiler/codegen/function.h"

namespace bpfql::codegen {
namespace {

std::string c_type_of(const Type& t) {
  if (t.is_bool()) return "u8";
  int bytes = t.bits <= 8 ? 1 : t.bits <= 16 ? 2 : t.bits <= 32 ? 4 : 8;
  return c_int_type(bytes, t.is_signed);
}

std::string plus(const std::string& base, uint64_t offset) {
  if (offset == 0) return base;
  return fmt::format("({} + {})", base, offset);
}

constexpr int kJoinArgs = 16;  // join() reads argv[0..15] at most

}  // namespace

std::string FunctionGen::read_into_local(const std::string& key, const std::string& c_type,
                                         int size, const std::string& address, bool user,
                                         const std::string& note) {
  auto it = memory_locals_.find(key);
  if (it != memory_locals_.end()) return it->second;
  std::string local = fresh("mem");
  line(fmt::format("{} {} = 0;", c_type, local));
  line(fmt::format("{}(&{}, {}, (void *){});  /* {} */",
                   user ? "bpf_probe_read_user" : "bpf_probe_read_kernel", local, size, address,
                   c_names::comment_text(note)));
  memory_locals_.emplace(key, local);
  return local;
}

Result<std::string> FunctionGen::address_of(const Expr& e) {
  if (auto* m = e.as<Member>()) {
    if (m->arrow) {
      auto base = value(*m->object);
      if (!base) return std::unexpected(base.error());
      return plus(base->text, static_cast<uint64_t>(m->offset));
    }
    auto base = address_of(*m->object);
    if (!base) return base;
    return plus(*base, static_cast<uint64_t>(m->offset));
  }
  if (auto* ix = e.as<Index>()) {
    uint64_t offset = ix->at * static_cast<uint64_t>(ix->elem_size);
    if (ix->object->type.is_pointer()) {
      auto base = value(*ix->object);
      if (!base) return std::unexpected(base.error());
      return plus(base->text, offset);
    }
    auto base = address_of(*ix->object);
    if (!base) return base;
    return plus(*base, offset);
  }
  return std::unexpected(unsupported(e, fmt::format("'{}' has no address", e.text)));
}

// The memory a member or element is read from is its object's: a pointer's pointee, a place's.
static bool object_in_user_memory(const Expr& e) {
  if (auto* m = e.as<Member>()) return m->object->type.user_memory;
  if (auto* ix = e.as<Index>()) return ix->object->type.user_memory;
  return false;
}

Result<CValue> FunctionGen::memory_value(const Expr& e) {
  if (!e.type.is_integer())
    return std::unexpected(unsupported(e, fmt::format("'{}' is not a number", e.text)));
  auto address = address_of(e);
  if (!address) return std::unexpected(address.error());
  Type t = e.type;
  if (t.is_pointer()) t = Type::integer(64, false);
  std::string local = read_into_local(*address, c_type_of(t), t.bits / 8, *address,
                                      object_in_user_memory(e), e.text);
  return CValue{local, t};
}

Result<CValue> FunctionGen::record_element(const Expr& e, const Index& ix) {
  const auto* ref = ix.object->as<FieldRef>();
  const TracepointField* tf = ref ? format_field(ref->name) : nullptr;
  if (!tf || !env_.tracepoint)
    return std::unexpected(unsupported(e, fmt::format("probe '{}' has no array '{}'",
                                                      env_.probe->spec, ix.object->text)));
  reads_record_ = true;
  uint64_t offset = static_cast<uint64_t>(tf->offset) + ix.at * static_cast<uint64_t>(ix.elem_size);
  std::string local = fmt::format("args_{}_{}", ref->name, ix.at);
  std::string type = c_type_of(e.type);
  return CValue{cached(local, fmt::format("{} {} = *({} *)((char *){} + {});", type, local, type,
                                          env_.ctx, offset)),
                e.type};
}

Result<CValue> FunctionGen::cast_value(const Expr& e, const Cast& c) {
  auto v = value(*c.operand);
  if (!v) return v;
  if (e.type.is_pointer()) {
    std::string text = v->type.bits == 64 && !v->type.is_bool() ? v->text : "(u64)" + v->text;
    return CValue{text, Type::integer(64, false)};
  }
  return CValue{fmt::format("(({}){})", c_type_of(e.type), v->text), e.type};
}

Result<CValue> FunctionGen::conditional_value(const Expr& e, const Conditional& c) {
  auto cond = condition(*c.cond);
  if (!cond) return std::unexpected(cond.error());
  auto a = e.type.is_bool() ? value(*c.then) : typed_value(*c.then);
  if (!a) return a;
  auto b = e.type.is_bool() ? value(*c.otherwise) : typed_value(*c.otherwise);
  if (!b) return b;
  std::string type = c_type_of(e.type);
  return CValue{fmt::format("({} ? ({}){} : ({}){})", *cond, type, a->text, type, b->text), e.type};
}

// A string a member or element holds: a char[N] where it is, or a char * read first.
Result<void> FunctionGen::read_memory_string(const Expr& e, const std::string& dest) {
  if (!e.type.ktype)
    return std::unexpected(unsupported(e, fmt::format("cannot read string '{}'", e.text)));
  auto address = address_of(e);
  if (!address) return std::unexpected(address.error());
  bool user = e.type.user_memory;
  std::string from = *address;
  if (e.type.ktype->kind == KernelType::Kind::Pointer)
    from = read_into_local(*address, "u64", 8, *address, object_in_user_memory(e), e.text);
  line(fmt::format("{0}({1}, sizeof({1}), (void *){2});",
                   user ? "bpf_probe_read_user_str" : "bpf_probe_read_kernel_str", dest, from));
  return {};
}

// join(ARGV): each string after the previous one's end, a separator between them, at most
// kJoinArgs of them and each at most `strlen` bytes; `size` (a power of two) bounds the whole.
// The offset is checked before each write and masked, so the verifier sees every access in bounds.
Result<void> FunctionGen::read_joined(const Expr& e, const Call& c, const std::string& dest,
                                      uint32_t size) {
  auto ptrs = value(*c.args[0]);
  if (!ptrs) return std::unexpected(ptrs.error());
  char sep = ' ';
  if (c.args.size() == 2)
    if (auto* lit = c.args[1]->as<StringLiteral>(); lit && lit->value.size() == 1) sep = lit->value[0];
  bool user = e.type.source == StringSource::UserPtr;
  uint32_t each = std::min<uint32_t>(query_.strlen, size / 2);
  std::string read = user ? "bpf_probe_read_user" : "bpf_probe_read_kernel";
  std::string n = fresh("join");
  // The offset is a u64 (a u32 is zero-extended through a copy whose bounds the verifier does not
  // carry back); each string is read one byte past the previous one's NUL, and the separator is
  // written over that NUL only once the read succeeded, so the text always ends in a NUL.
  line(fmt::format("{}[0] = 0;", dest));
  line(fmt::format("u64 {}_off = 0;", n));
  line(fmt::format("for (u32 {0}_i = 0; {0}_i < {1}; {0}_i++) {{", n, kJoinArgs));
  line(fmt::format("  u64 {}_arg = 0;", n));
  line(fmt::format("  {0}(&{1}_arg, 8, (void *)({2} + {1}_i * 8));", read, n, ptrs->text));
  line(fmt::format("  if (!{}_arg)", n));
  line("    break;");
  line(fmt::format("  u64 {0}_at = {0}_i ? {0}_off + 1 : 0;", n));
  line(fmt::format("  if ({}_at > {})", n, size - each));
  line("    break;");
  line(fmt::format("  long {0}_n = {1}_str(&{2}[{0}_at], {3}, (void *){0}_arg);", n, read, dest,
                   each));
  line(fmt::format("  if ({}_n <= 0)", n));
  line("    break;");
  line(fmt::format("  if ({0}_i && {0}_off < {1})", n, size));
  line(fmt::format("    {}[{}_off] = {};", dest, n,
                   c_names::char_literal(static_cast<unsigned char>(sep))));
  line(fmt::format("  {0}_off = {0}_at + {0}_n - 1;", n));
  line("}");
  return {};
}

}  // namespace bpfql::codegen
