// Probe specs ("tracepoint:syscalls:sys_enter_read", "uprobe:c:malloc", "profile:hz:99", ...)
// → resolved ProbeRefs, asking the catalog what exists.
#pragma once

#include <vector>

#include "compiler/catalog.h"
#include "compiler/check.h"
#include "compiler/query.h"

namespace bpfql {

// Resolves one spec; a tracepoint wildcard yields one ProbeRef per matching tracepoint.
// `pid` (-1 = any) is recorded for uprobes and USDT.
Result<std::vector<ProbeRef>> resolve_probe(const Located& spec, const KernelCatalog& catalog);

// Resolves every spec of a list, rejecting duplicates.
Result<std::vector<ProbeRef>> resolve_probes(const std::vector<Located>& specs,
                                             const KernelCatalog& catalog);

}  // namespace bpfql
