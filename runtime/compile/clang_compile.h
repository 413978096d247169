// Compiling a Plan's plain C (Plan::c_plain) to a BPF ELF object in this process, in one clang
// pass: no kernel headers (the program brings its own prelude, compiler/codegen/c_prelude.h), no
// rewriting, -O2 for the BPF target. libbcc needs three passes over the C and ~90 kernel headers
// for the same program (its tracepoint pass, its rewriter, then the compile); this one takes
// ~5-10 ms. It runs in bpfql-compile-plain (compile_plain.h), which links clang and LLVM in
// statically; the unit tests link the same code against the shared libraries libbcc uses.
#pragma once

#include <expected>
#include <string>
#include <string_view>

namespace bpfql {

// The ELF object's bytes, or clang's diagnostics.
std::expected<std::string, std::string> compile_plain_c(std::string_view source);

}  // namespace bpfql
