// bpfql-compile-plain: compiles a program's plain C in one clang pass (runtime/compile/compile_plain.h).
// clang and LLVM are linked into it statically, so it starts in ~3 ms instead of the ~27 ms
// libclang-cpp.so and libLLVM.so take to load.
#include "runtime/compile/compile_helper_main.h"
#include "runtime/compile/compile_plain.h"

int main(int argc, char** argv) {
  return bpfql::compile_helper_main(argc, argv, [](const bpfql::CompileRequest& request) {
    return bpfql::compile_plain(request);
  });
}
