// A text form of KernelStructs: what tests/fixtures/btf/*.txt hold (extracted from the running
// kernel's BTF), so that unit tests check struct access without /sys.
//
//   struct task_struct 9792
//   pid 2472 s32
//   real_parent 2488 *struct:task_struct
//   comm 3000 [16]char
//   sched_reset_on_fork 2456:1:1 u32        (a bitfield: byte offset, first bit, width)
//
// Types: u8..u64, s8..s64, char, `*T` a pointer to T, `[N]T` an array, `struct:TAG`,
// `union:TAG` (TAG "#ID" for anonymous ones), `other:WHAT`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/check/catalog.h"
#include "compiler/diagnostics.h"

namespace bpfql {

std::string kernel_struct_text(const KernelStruct& s);
// Every struct of a text; an error names the line.
Result<std::vector<KernelStruct>> parse_kernel_structs(std::string_view text);

}  // namespace bpfql
