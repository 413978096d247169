#include "compiler/types.h"

#include <fmt/format.h>

namespace bpfql {

std::string Type::describe() const {
  switch (kind) {
    case TypeKind::Unknown: return "unknown";
    case TypeKind::Integer: return fmt::format("{}{}", is_signed ? 's' : 'u', bits);
    case TypeKind::Boolean: return "bool";
    case TypeKind::String: return "string";
    case TypeKind::Stack: return "stack";
    case TypeKind::Bytes: return fmt::format("u8[{}]", byte_len);
    case TypeKind::Kernel: return ktype ? ktype->spelling() : "kernel type";
  }
  return "unknown";
}

}  // namespace bpfql
