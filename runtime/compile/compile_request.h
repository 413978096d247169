// What a compile helper is asked (CompileRequest) and what it answers (CompileOutcome), and how
// both travel over its stdin and stdout. The compilers live in executables of their own
// (compile_child.h): clang and LLVM take ~27 ms to load, and the bpfql process, which traces
// for hours and starts from the program cache most times, never loads them. Nothing here needs
// clang or libbcc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/plan.h"
#include "runtime/compile/program_image.h"

namespace bpfql {

// A function the program attaches: the compile takes its instructions (and the libbcc compile
// runs the verifier on it, so a rejection comes with libbcc's log, C lines included).
struct CompileFunction {
  std::string name;
  uint32_t prog_type = 0;  // bpf_prog_type (program_type_of)
  std::string query;       // the first query attaching it, for a rejection's message
};

// A USDT probe libbcc generates argument readers for (its ebpf::USDT).
struct CompileUsdt {
  std::string binary;
  int pid = -1;  // -1: every process running the binary
  std::string provider;
  std::string name;
  std::string function;  // the C function the probe runs
};

struct CompileRequest {
  std::string c_plain;   // Plan::c_plain: for bpfql-compile-plain ("" when the Plan has none)
  std::string c_source;  // Plan::c_source: for bpfql-compile-libbcc
  std::vector<CompileFunction> functions;  // each attached function once, in Plan order
  std::vector<CompileUsdt> usdt;
  // A function the verifier gave up on (too complex) is verified again to get the log (-v).
  bool full_verifier_log = false;
};

CompileRequest compile_request(const Plan& plan, bool full_verifier_log);

struct CompileOutcome {
  std::optional<ProgramImage> image;  // nullopt on failure
  std::string error;                  // on failure: the message for stderr
  std::string log;                    // the compiler's stderr meanwhile (noise removed)
  // The image came from bpfql's own one-pass compile of Plan::c_plain, which runs no
  // verifier: a rejection when it loads is best explained by compiling with libbcc.
  bool plain = false;
};

// The bytes on the pipes (exposed for tests). Decoding refuses anything malformed.
std::string encode_request(const CompileRequest& request);
std::optional<CompileRequest> decode_request(std::string_view bytes);
std::string encode_outcome(const CompileOutcome& outcome);
std::optional<CompileOutcome> decode_outcome(std::string_view bytes);

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
std::string verifier_failure_message(const std::string& query, const std::string& function,
                                     const std::string& reason, const std::string& log);

}  // namespace bpfql
