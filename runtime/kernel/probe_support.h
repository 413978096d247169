// Refuses, before anything is loaded, probes this kernel or machine cannot offer (kprobes compiled
// out, no PMU), with the reason and, where one exists, a tracepoint to use instead.
#pragma once

#include <string>

#include "compiler/check/catalog.h"
#include "compiler/plan.h"

namespace bpfql {

// "" when every attach point of the Plan can be offered; otherwise the message for the user.
std::string unavailable_probes(const Plan& plan, const KernelCatalog& catalog);

// A tracepoint close to kernel function `function` ("do_sys_openat2" → "syscalls:sys_enter_openat"),
// or "" when none is.
std::string tracepoint_instead_of(const std::string& function, const KernelCatalog& catalog);

}  // namespace bpfql
