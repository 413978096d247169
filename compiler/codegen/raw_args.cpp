#include "compiler/codegen/raw_args.h"

#include <fmt/format.h>

#include "compiler/codegen/c_prelude.h"

namespace bpfql::codegen {
namespace {

// x86-64's struct pt_regs: orig_ax, the system call's number, is the 16th register saved.
constexpr int kOrigAxOffset = 15 * 8;

std::string argument(const std::string& ctx, int i) {
  return fmt::format("((u64 *){})[{}]", ctx, i);
}

}  // namespace

bool has_raw_fields(const std::string& tracepoint) {
  return tracepoint == "raw_syscalls:sys_enter" || tracepoint == "raw_syscalls:sys_exit";
}

std::optional<RawFieldRead> raw_field_read(const std::string& tracepoint, const std::string& field,
                                           const std::string& local, const std::string& ctx) {
  if (tracepoint == "raw_syscalls:sys_enter" && field == "id")
    return RawFieldRead{
        {fmt::format("long {} = (long){};  /* TP_PROTO(regs, id) */", local, argument(ctx, 1))}};
  if (tracepoint == "raw_syscalls:sys_exit" && field == "ret")
    return RawFieldRead{
        {fmt::format("long {} = (long){};  /* TP_PROTO(regs, ret) */", local, argument(ctx, 1))}};
  // The record's id is syscall_get_nr(current, regs): regs->orig_ax, an int. Registers are
  // kernel memory behind the first argument (a plain raw tracepoint has no typed pointers).
  if (tracepoint == "raw_syscalls:sys_exit" && field == "id" && plain_c_has_pt_regs())
    return RawFieldRead{{
        fmt::format("unsigned long {}_orig_ax = 0;", local),
        fmt::format("bpf_probe_read_kernel(&{}_orig_ax, sizeof({}_orig_ax), (void *)({} + {}));  "
                    "/* regs->orig_ax */",
                    local, local, argument(ctx, 0), kOrigAxOffset),
        fmt::format("long {} = (int){}_orig_ax;", local, local),
    }};
  return std::nullopt;
}

}  // namespace bpfql::codegen
