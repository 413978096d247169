// Loading a Plan: host checks (root, kernel headers, tracefs), compiling the C in a helper
// process (compile_child.h) or taking the compiled program
// from the program cache (program_cache.h), then creating the maps and running the verifier on
// every function the Plan attaches in this process (bpf_object.h), so that a rejection is
// reported for its query before anything is attached.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "compiler/plan.h"
#include "runtime/load/bpf_object.h"

namespace bpfql {

// What is missing on this host for the Plan to load, as a message that says what to do.
std::optional<std::string> check_host(const Plan& plan);
// Kernel headers are needed only where libbcc compiles (compile_child.h compiler_for): missing
// ones are a problem for those Plans alone.
std::optional<std::string> kernel_headers_problem(const Plan& plan, const std::string& release,
                                                  const std::string& modules_dir = "/lib/modules");
// The first of those checks, which needs no Plan: not root.
std::optional<std::string> check_privileges();

struct LoadResult {
  std::unique_ptr<BpfObject> bpf;  // null on failure
  std::string error;               // on failure: the message for stderr
  // libbcc's and LLVM's stderr meanwhile (noise removed), and what the program cache did
  // ("program cache: hit ..." / "miss ..." / "not used: ..."): printed with -v.
  std::string log;
};

// Compiles (or takes from the cache) and verifies. Captures stderr meanwhile (returned in
// `log`). With `full_verifier_log` (-v), a program the verifier gave up on (too complex) is
// verified again to get the log libbcc does not print in that case. Without `use_cache`
// (--no-cache) the cache is neither read nor written.
LoadResult load_program(const Plan& plan, bool full_verifier_log = false, bool use_cache = true);

}  // namespace bpfql
