// Fusion: the unit of attachment is the probe, not the query. Every query of a program whose
// function attaches to the same tracepoint runs in one BPF program on it: each query's body in
// turn, in its own block, its `return 0`s jumping to the block's end. The probe's fixed cost (the
// attach, the record, the program's entry) is paid once per event; each query pays only for its
// own filters and updates. Each body keeps its own maps, so output, dropped and lost counts stay
// per query.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/codegen/internal.h"
#include "compiler/plan.h"

namespace bpfql::codegen {

// Where a body on syscalls:sys_enter_NAME (sys_exit_NAME) can run instead: in the program on
// raw_syscalls:sys_enter (sys_exit), which every system call passes through anyway when another
// query traces it. The kernel runs both kinds of event from the same tracepoint, and their
// records agree byte for byte where a syscalls:* body reads (the number at offset 8, the
// arguments or the return value from 16), so the body runs unchanged behind two tests: the
// number is NAME's, and the call is no 32-bit one (which syscalls:* events leave out, and which
// raw_syscalls sees under its 32-bit number). Moved, the body no longer needs the syscalls:*
// event attached at all: the kernel builds no second record and runs no second program for it.
struct SyscallHome {
  std::string tracepoint;  // "raw_syscalls:sys_enter" or "raw_syscalls:sys_exit"
  int64_t nr = -1;         // NAME's number (x86_64)
  int compat_offset = -1;  // task_struct's thread_info.status, whose TS_COMPAT bit marks the call
};

// The home of a body on `format` (a syscalls:* tracepoint) whose query found `compat_offset`
// (CheckedQuery::syscall_compat_offset); nullopt for any other tracepoint, a system call without
// a known number, or a record laid out otherwise than the raw_syscalls one's.
std::optional<SyscallHome> syscall_home(const TracepointFormat& format,
                                        std::optional<int> compat_offset);

// Whether `format` is raw_syscalls:sys_enter or sys_exit laid out as syscall_home() expects.
bool raw_syscalls_record(const TracepointFormat& format);

// The statements one query's function runs at one attach point (FunctionGen::body_lines()).
struct AttachedBody {
  size_t query = 0;   // index into Plan::queries
  size_t attach = 0;  // index into that query's attaches
  std::string comment;  // "query 'x' (file:line): tracepoint:..."
  std::vector<std::string> lines;
  std::optional<SyscallHome> home;  // it may run on raw_syscalls instead (above)
  bool raw_syscalls = false;        // it runs on raw_syscalls, whose record is as home expects
  // The same body written for the raw_syscalls raw tracepoint (RawSyscall in function.h), where
  // every field it reads has a place there; a moved body's reads 64-bit registers.
  std::optional<std::vector<std::string>> raw_lines;
  std::optional<SyscallRegs> syscall_regs;  // where raw_lines read the registers
};

// raw_syscalls' raw tracepoints. The kernel calls a raw tracepoint's programs with the
// tracepoint's own arguments, without building the record: at sys_enter the call's struct
// pt_regs and its number, at sys_exit the struct pt_regs and its return value (a small program
// on both adds 40 ns to a system call here, against 62 ns as ordinary tracepoints). A body reads its fields there: the
// number and return value as given, the number at sys_exit from regs->orig_ax, a syscalls:*
// argument from its register. raw_syscalls' own args[] is left to the record: in a 32-bit call
// syscall_get_arguments() takes other registers. A group goes raw when every body can.
// The context struct of raw_syscalls:sys_enter's (sys_exit's) raw tracepoint (helpers.h).
std::string raw_syscalls_context(bool enter);
// The statement that reads the number at sys_exit into bpfql_exit_nr: one line, so that a
// fused program reads it once for all its bodies.
std::string raw_exit_number_read(const SyscallRegs& regs);

// Declarations a body may open with that read the same thing in every query (a helper with no
// argument): in a fused program, one that two bodies read, and one of them before any of its
// filters, is read once at the top (never earlier than a query alone would have read it).
const std::vector<std::string>& hoistable_reads();

// Groups the bodies of different queries attached to the same tracepoint; for each group of two
// or more queries, writes one function running them all in query order and points those
// queries' attaches at it (raw tracepoint only if every body can run as one). A body with a
// SyscallHome joins the group of its home where a body of another query runs there already, and
// its attach moves there (unless its query has another body there). A query with two
// functions on one tracepoint (a span whose begin and end are the same probe) keeps its own
// programs there: their order is the query's. Returns the fused functions' text ("" if none);
// adds the tracepoints whose struct they name to `state.tracepoints_used`.
std::string fuse_by_attach_point(const std::vector<AttachedBody>& bodies, Plan& plan,
                                 ProgramState& state);

}  // namespace bpfql::codegen
