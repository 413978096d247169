// Kernel structs from the running kernel's BTF (/sys/kernel/btf/vmlinux), as the checker's
// KernelStruct: members with byte offsets and resolved types. The only reader of BTF types.
#pragma once

#include <optional>
#include <string_view>

#include "compiler/check/catalog.h"

struct btf;

namespace bpfql {

// `name` is a struct or union tag, or "#ID" for an anonymous one; nullopt when BTF lacks it.
std::optional<KernelStruct> btf_kernel_struct(const btf* types, std::string_view name);

}  // namespace bpfql
