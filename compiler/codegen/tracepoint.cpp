#include "compiler/codegen/tracepoint.h"

#include <fmt/format.h>

#include "compiler/codegen/c_names.h"
#include "compiler/codegen/layout.h"

namespace bpfql::codegen {
namespace {

bool is_int_size(int size) { return size == 1 || size == 2 || size == 4 || size == 8; }

// Declares one field with a C type of exactly its size; false when it must stay padding.
bool place_field(StructLayout& layout, const TracepointField& f) {
  if (f.size <= 0 || f.offset < 0 || !c_names::is_c_member_name(f.name)) return false;
  auto offset = static_cast<uint32_t>(f.offset);
  auto size = static_cast<uint32_t>(f.size);
  switch (f.kind) {
    case FieldKind::Integer:
      if (is_int_size(f.size))
        return layout.place(f.name, c_int_type(f.size, f.is_signed), 0, offset, size);
      break;
    case FieldKind::CharArray:
      return layout.place(f.name, "char", size, offset, size);
    case FieldKind::DataLoc:  // u32: offset of the bytes in the low 16 bits, length in the high
    case FieldKind::CharPtr:
      if (f.size == 4 || f.size == 8)
        return layout.place(f.name, c_int_type(f.size, false), 0, offset, size);
      break;
    case FieldKind::ByteArray:  // its bytes, as declared
    case FieldKind::Other:
      break;
  }
  return layout.place(f.name, "u8", size, offset, size);
}

}  // namespace

Result<TracepointStruct> tracepoint_struct(const TracepointFormat& format, const SourceLoc& loc,
                                           std::set<std::string>& taken) {
  if (!c_names::is_safe_identifier_part(format.category) ||
      !c_names::is_safe_identifier_part(format.name))
    return error_at(loc, fmt::format("tracepoint '{}:{}' has a name generated code cannot use",
                                     c_names::comment_text(format.category),
                                     c_names::comment_text(format.name)));
  TracepointStruct out;
  out.tag = fmt::format("tp_{}_{}", format.category, format.name);
  for (int n = 2; taken.count(out.tag); ++n)
    out.tag = fmt::format("tp_{}_{}_{}", format.category, format.name, n);
  taken.insert(out.tag);

  StructLayout layout(out.tag);
  for (const auto& field : format.fields)
    if (place_field(layout, field)) out.readable.insert(field.name);
  layout.pad_to_multiple(8);
  out.declaration = fmt::format("/* tracepoint {}:{}, laid out from its format file */\n{}",
                                format.category, format.name, layout.declaration());
  return out;
}

}  // namespace bpfql::codegen
