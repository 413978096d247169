// Kernel struct layouts from BTF: the running kernel's (/sys/kernel/btf/vmlinux) or any other
// kernel's (a snapshot's, runtime/kernel/snapshot_catalog.h). Generated code reads the few kernel
// structs it needs (task_struct for ppid) by these offsets, never through kernel headers, which
// need not match the running kernel. Every BTF question is a function of a `const btf*`, so that
// each KernelCatalog answers it the same way from its own BTF.
#pragma once

#include <optional>
#include <string_view>

struct btf;

namespace bpfql {

// The running kernel's BTF, loaded once; nullptr when the kernel has none.
const btf* running_kernel_btf();

// Byte offset of `member` in `struct name` of `types`, or nullopt when `types` is null or the
// struct or member is missing.
std::optional<int> kernel_member_offset(const btf* types, std::string_view struct_name,
                                        std::string_view member);

// The same, in the running kernel's BTF.
std::optional<int> kernel_member_offset(std::string_view struct_name, std::string_view member);

}  // namespace bpfql
