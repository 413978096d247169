// `run -c`: the command bpfql started and every process it starts after it. A hash map of their
// pids, kept by two small functions: on sched_process_fork a child of a tracked process (or of
// the command itself) is added, on sched_process_exit the exiting task is removed. Queries then
// keep an event when its process is the command or is in the map.
#pragma once

#include <string>
#include <vector>

#include "compiler/check/check.h"
#include "compiler/codegen/internal.h"

namespace bpfql::codegen {

inline constexpr const char* kProcessTreeMap = "bpfql_tree";

struct ProcessTree {
  std::string text;                  // the map and both functions; "" when no query uses -c
  std::vector<PlanAttach> attaches;  // the two functions' attach points
  std::string owner;                 // the query whose attaches list carries them
};

Result<ProcessTree> process_tree_program(const CheckedProgram& program, ProgramState& state);

// `bpf_map_lookup_elem(&bpfql_tree, key)` in the dialect; `key` points to a u32 tgid.
std::string process_tree_lookup(Dialect d, const std::string& key);

}  // namespace bpfql::codegen
