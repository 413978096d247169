// The work of bpfql-compile-libbcc (cli/helpers/): a request's BCC-dialect C (Plan::c_source)
// compiled by libbcc, with the USDT argument readers libbcc generates from the binaries' notes,
// and the verifier run on every attached function, so that a rejection is reported with
// libbcc's log (C lines included). libbcc's clang leaves ~30 MB of heap and touches ~30 MB of
// libclang in the process that runs it: that process is this short-lived helper, never the
// session.
#pragma once

#include "runtime/compile/compile_request.h"

namespace bpfql {

// `exiting`: the process exits next, so libbcc's module is left for the exit to free.
CompileOutcome compile_libbcc(const CompileRequest& request, bool exiting = false);

}  // namespace bpfql
