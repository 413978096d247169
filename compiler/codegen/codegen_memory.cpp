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

// `(G ? ADDRESS : 0)`: an address that is 0 (where every read fails, giving 0 or an empty
// string) when a variable index is out of its bound.
static std::string guarded(const std::string& address, const std::string& guard) {
  if (guard.empty()) return address;
  return fmt::format("({} ? {} : 0)", guard, address);
}

static void add_guard(std::string& guard, const std::string& test) {
  guard = guard.empty() ? test : guard + " && " + test;
}

// Where element `ix` of the array at `base` is: a constant index is a literal offset; a variable
// one is multiplied at run time and, in `guard`, checked against the array's bound (a negative
// signed index is out of bounds, of a pointer as of an array).
Result<std::string> FunctionGen::element_address(const Index& ix, const std::string& base,
                                                 std::string& guard) {
  if (!ix.variable) return plus(base, ix.at * static_cast<uint64_t>(ix.elem_size));
  auto index = value(*ix.index);
  if (!index) return std::unexpected(index.error());
  std::string at = fmt::format("(u64)({})", index->text);
  if (ix.bound)
    add_guard(guard, fmt::format("{} < {}", at, ix.bound));
  else if (index->type.is_signed)
    add_guard(guard, fmt::format("(s64)({}) >= 0", index->text));
  std::string scaled = ix.elem_size == 1 ? at : fmt::format("{} * {}", at, ix.elem_size);
  return fmt::format("({} + {})", base, scaled);
}

Result<std::string> FunctionGen::address_of(const Expr& e, std::string& guard) {
  if (auto* m = e.as<Member>()) {
    if (m->arrow) {
      auto base = value(*m->object);
      if (!base) return std::unexpected(base.error());
      return plus(base->text, static_cast<uint64_t>(m->offset));
    }
    auto base = address_of(*m->object, guard);
    if (!base) return base;
    return plus(*base, static_cast<uint64_t>(m->offset));
  }
  if (auto* ix = e.as<Index>()) {
    if (ix->object->type.is_pointer()) {
      auto base = value(*ix->object);
      if (!base) return std::unexpected(base.error());
      return element_address(*ix, base->text, guard);
    }
    auto base = address_of(*ix->object, guard);
    if (!base) return base;
    return element_address(*ix, *base, guard);
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
  std::string guard;
  auto address = address_of(e, guard);
  if (!address) return std::unexpected(address.error());
  Type t = e.type;
  if (t.is_pointer()) t = Type::integer(64, false);
  std::string from = guarded(*address, guard);
  std::string local = read_into_local(from, c_type_of(t), t.bits / 8, from,
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
  // raw_syscalls' args[]: syscall_get_arguments() takes other registers in a 32-bit call.
  if (env_.raw_syscall != RawSyscall::None) raw_unreadable_ = true;
  std::string type = c_type_of(e.type);
  if (ix.variable) return record_element_chosen(e, ix, *tf);
  uint64_t offset = static_cast<uint64_t>(tf->offset) + ix.at * static_cast<uint64_t>(ix.elem_size);
  std::string local = fmt::format("args_{}_{}", ref->name, ix.at);
  return CValue{cached(local, fmt::format("{} {} = *({} *)((char *){} + {});", type, local, type,
                                          env_.ctx, offset)),
                e.type};
}

// `args.ARR[I]` with a variable I: the verifier refuses a variable offset into the record, so
// I chooses among the elements by comparison (the checker bounds their number); past the end: 0.
Result<CValue> FunctionGen::record_element_chosen(const Expr& e, const Index& ix,
                                                  const TracepointField& tf) {
  std::string key = "record:" + e.text;
  if (auto it = memory_locals_.find(key); it != memory_locals_.end())
    return CValue{it->second, e.type};
  auto index = value(*ix.index);
  if (!index) return std::unexpected(index.error());
  std::string type = c_type_of(e.type);
  std::string at = fresh("at");
  line(fmt::format("u64 {} = (u64)({});", at, index->text));
  std::string local = fresh("elem");
  line(fmt::format("{} {} = 0;", type, local));
  line(fmt::format("switch ({}) {{", at));
  for (uint64_t i = 0; i < ix.bound; ++i) {
    uint64_t offset = static_cast<uint64_t>(tf.offset) + i * static_cast<uint64_t>(ix.elem_size);
    line(fmt::format("  case {}: {} = *({} *)((char *){} + {}); break;", i, local, type, env_.ctx,
                     offset));
  }
  line("}");
  memory_locals_.emplace(key, local);
  return CValue{local, e.type};
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
  std::string guard;
  auto address = address_of(e, guard);
  if (!address) return std::unexpected(address.error());
  bool user = e.type.user_memory;
  std::string from = guarded(*address, guard);
  if (e.type.ktype->kind == KernelType::Kind::Pointer)
    from = read_into_local(from, "u64", 8, from, object_in_user_memory(e), e.text);
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
