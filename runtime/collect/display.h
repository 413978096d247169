// Display functions (syscall(), user(), errno(), ksym(), usym(), probe, IP addresses), applied
// in user space to a decoded value just before it is printed. Also the symbolizers the collector
// uses for stacks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "compiler/plan.h"
#include "runtime/collect/result.h"

namespace bpfql {

// Turns a raw decoded cell into what `d` displays:
//   Syscall: number → "getpid" (x86_64), unknown → "syscall_N".
//   User:    uid → user name, unknown → the uid as a string.
//   Errno:   negative → "ENOENT"; 0, positive or unknown → the value unchanged.
//   Ksym:    kernel address → "sym+0xoff" (or "sym"), unknown → "0xADDR".
//   Usym:    user address in process `pid_for_usym` → "sym+0xoff", unknown → "0xADDR".
//   Probe:   index i → probe_names[i]; without probe_names (or out of range) unchanged.
//   Ipv4:    a byte array, shown as "127.0.0.1" (it stays bytes: BytesValue::shown).
//   Ipv6:    a byte array, shown as "::1".
// Other cells are returned unchanged: Ipv4/Ipv6 apply only to byte arrays, the rest only to
// integers.
Cell apply_display(Display d, const Cell& raw, int pid_for_usym,
                   std::span<const std::string> probe_names = {});

// The pieces, for callers that hold plain numbers.
std::string syscall_display(int64_t nr);
std::string user_display(uint32_t uid);
std::optional<std::string_view> errno_name(int err);  // 2 → "ENOENT"; in errno_names.cpp

// Kernel symbol for an address, from /proc/kallsyms (read once). "vfs_read+0x1a" ("vfs_read" at
// offset 0, or always without offset when with_offset is false); "0xffffffff81234567" when
// kallsyms is unreadable, hides addresses (non-root) or has no symbol near the address.
std::string ksym_name(uint64_t addr, bool with_offset = true);

// User symbol for an address in process `pid` (libbcc symbol cache, kept per pid), demangled.
// "0x7f..." when the process or the symbol is unknown.
std::string usym_name(uint64_t addr, int pid, bool with_offset = true);

}  // namespace bpfql
