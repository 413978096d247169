// A small, self-contained BTF holding only some kernel structs: each named root struct with
// every type it embeds, where a pointer to any other struct or union points at a forward
// declaration instead of pulling in its whole graph. A snapshot exported for a few queries
// carries this instead of all of vmlinux BTF (task_struct: ~40 KB instead of 5.5 MB).
#pragma once

#include <set>
#include <string>

#include "compiler/diagnostics.h"

struct btf;

namespace bpfql {

// Raw BTF bytes (btf__raw_data) of the subset of `source`; a root missing from `source` is left
// out (a check against the snapshot then finds it missing, as it would on that kernel).
std::expected<std::string, std::string> btf_subset(const btf* source,
                                                   const std::set<std::string>& root_structs);

}  // namespace bpfql
