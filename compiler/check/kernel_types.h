// Kernel types for the checker: the C type a tracepoint format or a cast spells, as a KernelType
// (with struct pointees resolved later, through the catalog's BTF), and the fixed-width integer
// names casts use.
#pragma once

#include <optional>
#include <string_view>

#include "compiler/check/catalog.h"

namespace bpfql {

// "const struct __kernel_timespec *", "const char *const *", "struct sock *", "void *", "int":
// qualifiers dropped, integer names of the LP64 ABI and the kernel's typedefs resolved. Struct
// and union pointees are named, not expanded. nullopt for what it cannot tell (function pointers,
// unknown typedefs).
std::optional<KernelType> kernel_type_from_spelling(std::string_view spelling);

// u8..u64, s8..s64 → an Integer KernelType; nullopt for anything else.
std::optional<KernelType> fixed_width_integer(std::string_view name);

}  // namespace bpfql
