// Kernel memory through BTF: `->` and `.` on kernel structs (curtask, typed pointer fields),
// `[N]` on arrays, typed pointers and tracepoint array fields, and casts (to an integer width,
// or of an address to a struct pointer). Offsets come from the catalog (kernel_access.h).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "compiler/check/expr_checker.h"
#include "compiler/check/kernel_access.h"
#include "compiler/check/kernel_types.h"

namespace bpfql::expr_check {
namespace {

// A variable index into a tracepoint record's array picks one of its elements with a chain of
// comparisons (the verifier refuses a variable offset into the record): at most this many.
constexpr uint64_t kMaxRecordChoices = 16;

bool is_struct(const KernelType& t) {
  return t.kind == KernelType::Kind::Struct || t.kind == KernelType::Kind::Union;
}
std::string pointee_phrase(const KernelType& t) {
  if (t.kind == KernelType::Kind::Other && t.name == "void") return "void";
  return fmt::format("a {}", t.spelling());
}
std::string void_hint(const Expr& object, const KernelType& t, const std::string& name) {
  if (t.kind != KernelType::Kind::Other || t.name != "void") return "";
  return fmt::format("; cast it to the struct it points to: '((struct NAME *){})->{}'",
                     object.text, name);
}

}  // namespace

Result<void> ExprChecker::visit(Expr& e, Member& m, int depth) {
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

// The index: a constant from 0 to 4096, or an integer expression evaluated per event.
Result<void> ExprChecker::check_index(Index& ix, int depth) {
  if (auto r = check(*ix.index, depth + 1); !r) return r;
  const Expr& index = *ix.index;
  if (auto at = fold(index)) {
    if (*at < 0 || *at > 4096)
      return error_at(index.loc, fmt::format("the index '{}' is {}; a constant index is from 0 "
                                             "to 4096",
                                             index.text, static_cast<int64_t>(*at)));
    ix.at = static_cast<uint64_t>(*at);
    ix.variable = false;
    return {};
  }
  if (index.type.is_pointer())
    return error_at(index.loc, fmt::format("the index '{}' is a pointer (to {}); an index is an "
                                           "integer",
                                           index.text, pointee_phrase(*index.type.ktype)));
  if (!index.type.is_integer())
    return error_at(index.loc, fmt::format("the index '{}' is a {}; an index is an integer",
                                           index.text, index.type.describe()));
  ix.variable = true;
  return {};
}

Result<void> ExprChecker::visit(Expr& e, Index& ix, int depth) {
  if (auto r = check_index(ix, depth); !r) return r;
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
    ix.bound = 0;  // a pointer says nothing of how many elements follow
  } else if (ot.is_place() && ot.ktype->kind == KernelType::Kind::Array) {
    if (!ix.variable && ix.at >= static_cast<uint64_t>(ot.ktype->array_len))
      return error_at(ix.index->loc, fmt::format("index {} is out of bounds: '{}' is a {} "
                                                 "(indexes 0..{})",
                                                 ix.at, ix.object->text, ot.describe(),
                                                 ot.ktype->array_len - 1));
    ix.bound = static_cast<uint64_t>(ot.ktype->array_len);
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
Result<void> ExprChecker::record_array_element(Expr& e, Index& ix, const FieldRef& ref) {
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
    if (ix.variable && len > kMaxRecordChoices)
      return error_at(ix.index->loc, fmt::format("field '{}' of tracepoint {}:{} is a '{}'; a "
                                                 "variable index chooses among at most {} "
                                                 "elements (a constant index reaches them all)",
                                                 ref.name, probe.format->category,
                                                 probe.format->name, f->c_type,
                                                 kMaxRecordChoices));
    if (ix.variable && ix.bound && ix.bound != len)
      return error_at(e.loc, fmt::format("field '{}' has different lengths in the probes of this "
                                         "query",
                                         ref.name));
    ix.bound = len;
    if (!ix.variable && ix.at >= len)
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

Result<void> ExprChecker::visit(Expr& e, Cast& c, int depth) {
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

}  // namespace bpfql::expr_check
