// Probe specs ("tracepoint:syscalls:sys_enter_read", "uprobe:c:malloc", "profile:hz:99", ...)
// → resolved ProbeRefs, asking the catalog what exists.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/check/catalog.h"
#include "compiler/check/check.h"
#include "compiler/syntax/query.h"

namespace bpfql {

// Resolves one spec; a tracepoint wildcard yields one ProbeRef per matching tracepoint.
// `pid` (-1 = any) is recorded for uprobes and USDT.
Result<std::vector<ProbeRef>> resolve_probe(const Located& spec, const KernelCatalog& catalog);

// `$name` in a probe spec ("usdt:$python:python:function__entry") becomes the value of string
// or int parameter `name`; the result is checked like any spec written out.
Result<Located> expand_probe_params(const Located& spec,
                                    const std::map<std::string, ParamValue>& params);

// Resolves every spec of a list (after expand_probe_params when `params` is given), rejecting
// duplicates.
Result<std::vector<ProbeRef>> resolve_probes(const std::vector<Located>& specs,
                                             const KernelCatalog& catalog,
                                             const std::map<std::string, ParamValue>* params = nullptr);

}  // namespace bpfql
