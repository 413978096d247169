// Offsets of kernel struct members from the running kernel's BTF (/sys/kernel/btf/vmlinux).
// Generated code reads the few kernel structs it needs (task_struct for ppid) by these offsets,
// never through kernel headers, which need not match the running kernel.
#pragma once

#include <optional>
#include <string_view>

namespace bpfql {

// Byte offset of `member` in `struct name`, or nullopt when BTF or the member is missing.
std::optional<int> kernel_member_offset(std::string_view struct_name, std::string_view member);

}  // namespace bpfql
