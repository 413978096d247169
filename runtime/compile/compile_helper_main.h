// The main() of both compile helpers (cli/helpers/): a CompileRequest on stdin, the
// CompileOutcome of `compile` on stdout, then exit without tearing anything down.
#pragma once

#include <functional>

#include "runtime/compile/compile_request.h"

namespace bpfql {

int compile_helper_main(int argc, char** argv,
                        const std::function<CompileOutcome(const CompileRequest&)>& compile);

}  // namespace bpfql
