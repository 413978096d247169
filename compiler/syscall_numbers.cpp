// Name → number for the syscalls:* tracepoints (see syscall_names.h).
#include <array>

#include "compiler/syscall_names.h"

namespace bpfql {

std::optional<int64_t> native_syscall_number(std::string_view name) {
  // Numbers whose x86_64 entry point has another name, or none (arch/x86/entry/syscalls/
  // syscall_64.tbl): `stat` (4) is sys_newstat, and set_thread_area (205) is not implemented for
  // 64-bit callers, so an event syscalls:sys_enter_stat or sys_enter_set_thread_area, where a
  // kernel has one, is the 32-bit call's and never fires for number 4 or 205.
  static constexpr std::array<std::string_view, 23> kOtherEntry = {
      "stat", "fstat", "lstat", "uname", "sendfile", "umount2", "_sysctl", "uselib",
      "create_module", "get_kernel_syms", "query_module", "nfsservctl", "getpmsg", "putpmsg",
      "afs_syscall", "tuxcall", "security", "set_thread_area", "get_thread_area",
      "lookup_dcookie", "epoll_ctl_old", "epoll_wait_old", "vserver"};
  for (auto other : kOtherEntry)
    if (name == other) return std::nullopt;
  constexpr int64_t kHighest = 1024;  // x86_64 numbers end below 550
  for (int64_t nr = 0; nr < kHighest; ++nr)
    if (auto n = syscall_name(nr); n && *n == name) return nr;
  return std::nullopt;
}

}  // namespace bpfql
