// Name → number for the syscalls:* tracepoints (see syscall_names.h).
#include <array>

#include "compiler/syscall_names.h"

namespace bpfql {

std::optional<int64_t> native_syscall_number(std::string_view name) {
  // Numbers whose x86_64 entry point has another name (arch/x86/entry/syscalls/syscall_64.tbl):
  // `stat` (4) is sys_newstat, so an event syscalls:sys_enter_stat, where a kernel has one, is
  // the 32-bit call's and never number 4's.
  static constexpr std::array<std::string_view, 6> kOtherEntry = {
      "stat", "fstat", "lstat", "uname", "sendfile", "umount2"};
  for (auto other : kOtherEntry)
    if (name == other) return std::nullopt;
  constexpr int64_t kHighest = 1024;  // x86_64 numbers end below 550
  for (int64_t nr = 0; nr < kHighest; ++nr)
    if (auto n = syscall_name(nr); n && *n == name) return nr;
  return std::nullopt;
}

}  // namespace bpfql
