// Loading a Plan through libbcc: host checks (root, kernel headers, tracefs), compiling the C
// (with the USDT probes it uses), and running the verifier on every function the Plan attaches,
// so that a rejection is reported for its query before anything is attached.
#pragma once

#include <bcc/BPF.h>

#include <memory>
#include <optional>
#include <string>

#include "compiler/plan.h"

namespace bpfql {

// What is missing on this host for the Plan to load, as a message that says what to do.
std::optional<std::string> check_host(const Plan& plan);
// The first of those checks, which needs no Plan: not root.
std::optional<std::string> check_privileges();

// The USDT probes the Plan attaches, in the form libbcc's init() takes them.
std::vector<ebpf::USDT> usdt_probes(const Plan& plan);

struct LoadResult {
  std::unique_ptr<ebpf::BPF> bpf;  // null on failure
  std::string error;               // on failure: the message for stderr
  std::string log;                 // libbcc's and LLVM's stderr meanwhile (noise removed)
};

// Compiles and verifies. Captures stderr meanwhile (returned in `log`). With
// `full_verifier_log` (-v), a program the verifier gave up on (too complex) is verified again
// to get the log libbcc does not print in that case.
LoadResult load_program(const Plan& plan, bool full_verifier_log = false);

}  // namespace bpfql
