// `entry.EXPR` in generated C (compiler/check/entry_values.h): an entry program at the
// function's entry probe stores the values under (pid_tgid, sp) in the query's hash `qN_entry`;
// the return looks up (pid_tgid, sp - 8), copies the record and deletes it. A return without a
// record (the hash was full, the call began before bpfql attached) runs nothing and counts one
// in `dropped`. Not part of the codegen.h interface.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/internal.h"

namespace bpfql::codegen {

// Whether the function of `role` at probe `index` (of its side) reads an entry value.
bool function_reads_entry(const CheckedQuery& q, Role role, size_t index);

// The return probes whose functions read entry values, each once (begin side first): an entry
// program is attached at each one's entry probe before any of the query's other programs.
std::vector<ProbeRef> entry_probes(const CheckedQuery& q);

// The structs and the hash of the query's entry records ("" when it has none).
std::string entry_declarations(const CheckedQuery& q, const QueryLayout& L, Dialect d,
                               std::vector<PlanMap>& maps);

}  // namespace bpfql::codegen
