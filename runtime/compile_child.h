// Compiling a Plan's C with libbcc in a short-lived child process. libbcc's clang leaves ~30 MB of
// heap and touches ~30 MB of libclang in the process that runs it, and that process is the one
// that then traces for hours: so the session forks before any libbcc compiler use, the child
// compiles the C (with the USDT argument readers libbcc generates from the binaries' notes),
// runs the verifier on every attached function (so that a rejection is reported with libbcc's
// log, C lines included), writes the result as a ProgramImage to a pipe and exits. The session
// then creates the maps and loads the programs itself (bpf_object.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/plan.h"
#include "runtime/program_image.h"

namespace bpfql {

struct CompileOutcome {
  std::optional<ProgramImage> image;  // nullopt on failure
  std::string error;                  // on failure: the message for stderr
  std::string log;                    // libbcc's and LLVM's stderr meanwhile (noise removed)
  // The image came from bpfql's own one-pass compile of Plan::c_plain (clang_compile.h), which
  // runs no verifier: a rejection when it loads is best explained by compiling with libbcc.
  bool plain = false;
};

// Which compiler a Plan goes to: bpfql's one-pass compile of its plain C when it has one,
// unless BPFQL_COMPILER=libbcc says otherwise (a way around a problem in it); else libbcc.
enum class Compiler { Plain, Libbcc };
Compiler compiler_for(const Plan& plan);

// Forks, compiles in the child, returns what it sent. Falls back to compile_here when it
// cannot fork. `compiler` Plain falls back to libbcc when the plain compile fails (the log
// says why).
CompileOutcome compile_in_child(const Plan& plan, bool full_verifier_log, Compiler compiler);

// The compile itself, in this process (the child's work; also the fallback). With
// `full_verifier_log`, a function the verifier gave up on is verified again to get the log.
CompileOutcome compile_here(const Plan& plan, bool full_verifier_log,
                            Compiler compiler = Compiler::Libbcc);

// The flags every compile of generated C passes to libbcc. libbcc's helpers.h includes
// <linux/log2.h> and <asm/page.h> only for two macros bpfql's C never uses (BPF_STACK_TRACE's
// roundup_pow_of_two, BPF_RINGBUF_OUTPUT's PAGE_SIZE); they pull in ~90 kernel headers, which
// clang parses in each of libbcc's three passes. Their include guards are defined up front, so
// they are skipped: ~35 ms off every cold compile.
const std::vector<std::string>& compile_cflags();

// The bpf_prog_type of a probe kind.
uint32_t program_type_of(ProbeKind kind);
// The bpf_prog_type an attach's function is loaded as: a raw tracepoint for a tracepoint whose
// program can run as one (PlanAttach::raw_tracepoint_ok: the kernel then calls it without
// building the record, 40 ns less per syscall here), except the syscalls category, whose
// events are no tracepoints of their own; otherwise that of its kind. attach.h falls back to a
// tracepoint program when the kernel has no raw tracepoint of the name.
uint32_t program_type_of(const PlanAttach& a);

// The messages of a failed compile and of a verifier rejection (as the loader always said them).
std::string compile_failure_message(const std::string& log);
std::string verifier_failure_message(const PlanQuery& q, const std::string& function,
                                     const std::string& reason, const std::string& log);

// The child's reply on the pipe (exposed for tests).
std::string encode_outcome(const CompileOutcome& outcome);
std::optional<CompileOutcome> decode_outcome(std::string_view bytes);

}  // namespace bpfql
