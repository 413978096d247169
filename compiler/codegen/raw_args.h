// Tracepoint fields a raw tracepoint program can read without the record: the kernel calls a raw
// tracepoint with the tracepoint's own arguments (TP_PROTO), never building the record the
// tracefs format describes. Where a field of the record is one of those arguments (or a register
// the record copies from one), a function that reads only such fields can still run as a raw
// tracepoint, which costs far less per event than a perf tracepoint (bench/README.md).
//
// Only fields whose value is the same as the record's, on every path the kernel takes, are
// listed: raw_syscalls:sys_enter's `id` (TP_PROTO(regs, id)), raw_syscalls:sys_exit's `ret`
// (TP_PROTO(regs, ret)) and its `id` (the record's syscall_get_nr(): x86-64's regs->orig_ax as
// an int). `args[6]` of sys_enter is not: the record takes it from syscall_get_arguments(),
// whose registers depend on whether the task is in a 32-bit (compat) system call.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace bpfql::codegen {

// How to read one field from a raw tracepoint's context `ctx` (a `u64 *` of its arguments):
// statements declaring a local named `local` of the field's record type.
struct RawFieldRead {
  std::vector<std::string> statements;
};

// The tracepoint ("category:name") has fields readable this way at all.
bool has_raw_fields(const std::string& tracepoint);

// The read of `field` into `local` (declared by the statements), or none when the field must
// come from the record. `ctx` is the C name of the program's context pointer.
std::optional<RawFieldRead> raw_field_read(const std::string& tracepoint, const std::string& field,
                                           const std::string& local, const std::string& ctx);

}  // namespace bpfql::codegen
