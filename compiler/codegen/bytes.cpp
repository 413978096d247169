// Byte arrays → C. A byte array is a field of the tracepoint record (u8 saddr[4]): copied whole
// into a key or event member, or compared with another of the same length in place.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/codegen/function.h"

namespace bpfql::codegen {

// "args->saddr": the array in the record, of the length the checker typed.
Result<std::string> FunctionGen::byte_field(const Expr& e) {
  const auto* f = e.as<FieldRef>();
  const TracepointField* tf = f ? format_field(f->name) : nullptr;
  if (!tf || tf->kind != FieldKind::ByteArray || tf->size != e.type.byte_len || !env_.tracepoint ||
      !env_.tracepoint->readable.count(f->name))
    return std::unexpected(
        unsupported(e, fmt::format("probe '{}' has no byte array '{}' of {} bytes",
                                   env_.probe->spec, e.text, e.type.byte_len)));
  return record_field(f->name);
}

// Plain loads from the record (the arrays are at most kMaxByteArray bytes): no helper call.
Result<void> FunctionGen::copy_bytes(const Expr& e, const std::string& lvalue, uint32_t size) {
  auto src = byte_field(e);
  if (!src) return std::unexpected(src.error());
  line(fmt::format("__builtin_memcpy({}, {}, {});", lvalue, *src,
                   std::min<uint32_t>(size, static_cast<uint32_t>(e.type.byte_len))));
  return {};
}

// A u8 that is 0 exactly when every byte is equal, folded in a loop: one test, not one branch
// per byte.
Result<std::string> FunctionGen::bytes_equal(const Expr& lhs, const Expr& rhs) {
  if (!lhs.type.is_bytes() || !rhs.type.is_bytes() || lhs.type.byte_len != rhs.type.byte_len)
    return std::unexpected(
        unsupported(lhs, "a byte array compares only with a byte array of its length"));
  auto a = byte_field(lhs);
  if (!a) return std::unexpected(a.error());
  auto b = byte_field(rhs);
  if (!b) return std::unexpected(b.error());
  std::string diff = fresh("diff");
  line(fmt::format("u8 {} = 0;", diff));
  line(fmt::format("for (u32 i = 0; i < {}; i++)", lhs.type.byte_len));
  line(fmt::format("  {} |= {}[i] ^ {}[i];", diff, *a, *b));
  return fmt::format("({} == 0)", diff);
}

}  // namespace bpfql::codegen
