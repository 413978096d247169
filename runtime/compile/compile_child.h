// Compiling a Plan in a helper process. The compilers are executables of their own, run for
// each compile and gone before tracing begins: bpfql-compile-plain (clang and LLVM linked in
// statically: starts in ~3 ms) and bpfql-compile-libbcc (libbcc, for USDT probes and for a
// verifier log with C lines). The bpfql process itself never loads clang, LLVM or libbcc's
// compiler (~27 ms of loading, ~55 MB of memory); it creates the maps and loads the programs
// itself (bpf_object.h) from the ProgramImage a helper sends back (compile_request.h).
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "compiler/plan.h"
#include "runtime/compile/compile_request.h"

namespace bpfql {

// Which compiler a Plan goes to: bpfql's one-pass compile of its plain C when it has one,
// unless BPFQL_COMPILER=libbcc says otherwise (a way around a problem in it); else libbcc.
enum class Compiler { Plain, Libbcc };
Compiler compiler_for(const Plan& plan);

// Runs the helper of `compiler` and returns what it sent. `compiler` Plain falls back to
// libbcc when the plain compile fails or its helper dies (the log says why).
CompileOutcome compile_in_child(const Plan& plan, bool full_verifier_log, Compiler compiler);

// The helper executable of a compiler.
std::string_view helper_name(Compiler compiler);
// Where it is: in $BPFQL_LIBEXEC_DIR when that is set (only there); else next to this
// executable (the build tree), in ../libexec/bpfql beside it, then in the libexec directory
// bpfql was configured to install into. On failure, a message naming the places looked in.
std::expected<std::string, std::string> helper_path(std::string_view name);

}  // namespace bpfql
