// bpfql-compile-libbcc: compiles a program's BCC-dialect C with libbcc and runs the verifier
// on it (runtime/compile/compile_libbcc.h): for USDT probes, and to explain a rejection with C lines.
#include "runtime/compile/compile_helper_main.h"
#include "runtime/compile/compile_libbcc.h"

int main(int argc, char** argv) {
  return bpfql::compile_helper_main(argc, argv, [](const bpfql::CompileRequest& request) {
    return bpfql::compile_libbcc(request, /*exiting=*/true);
  });
}
