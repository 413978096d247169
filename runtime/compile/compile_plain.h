// The work of bpfql-compile-plain (cli/helpers/): a request's plain C (Plan::c_plain) compiled
// in one clang pass (clang_compile.h) and read back into a ProgramImage (bpf_elf.h). No kernel
// headers, no libbcc, no verifier run: the session's own load runs the verifier.
#pragma once

#include "runtime/compile/compile_request.h"

namespace bpfql {

// On failure, `error` says why (clang's messages included) and the session compiles with
// libbcc instead.
CompileOutcome compile_plain(const CompileRequest& request);

}  // namespace bpfql
