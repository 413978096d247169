// How the generated C declares and uses its maps, in the two dialects bpfql writes:
//  - BCC's, for libbcc: `BPF_PERCPU_HASH(name, ...)` declarations and `name.lookup(&k)` calls,
//    which libbcc's frontend rewrites into helper calls on the map's fd;
//  - plain C, for bpfql's own one-pass clang compile (runtime/compile/clang_compile.h): each map a
//    `struct bpfql_map_def` in the "maps" section, helpers called with `&name` (the compiled
//    object's relocations then say which ld_imm64 names which map; c_prelude.h defines the rest).
#pragma once

#include <cstdint>
#include <string>

#include "compiler/plan.h"

namespace bpfql::codegen {

enum class Dialect { Bcc, Plain };

enum class MapKind {
  PercpuArray,           // key u32
  PercpuHash,            // preallocated
  PercpuHashOnDemand,    // entries allocated as they are used (BPF_F_NO_PREALLOC)
  Hash,
  PerfOutput,            // one perf buffer per CPU
  StackTrace,            // key int, value struct bpf_stacktrace
  TaskStorage,           // key: the current task; needs BTF for the map (runtime/compile/bpf_elf.h)
  Counter,               // one u64 shared by all CPUs (a one-entry array), added to atomically
};

struct MapDecl {
  MapKind kind = MapKind::PercpuArray;
  std::string name;
  std::string key_type;    // unused for arrays, perf outputs, stack traces and task storage
  std::string value_type;  // unused for perf outputs and stack traces
  uint64_t entries = 1;    // unused for perf outputs and task storage
  uint32_t key_size = 0;   // sizeof the key type (arrays: 4), as the C's _Static_asserts hold it
  uint32_t value_size = 0;
};

// The map as the Plan describes it (plan.h PlanMap): what the kernel will be asked to create.
PlanMap plan_map(const MapDecl& m);

// One declaration statement, ending in ";" (no newline).
std::string map_declaration(Dialect d, const MapDecl& m);

// Expressions. `key`, `value` and `data` are pointers ("&key").
std::string map_lookup(Dialect d, const std::string& map, const std::string& key);
// The value of `key`, inserted as `zero` when absent; NULL when the map is full.
std::string map_lookup_or_init(Dialect d, const std::string& map, const std::string& key,
                               const std::string& zero);
std::string map_update(Dialect d, const std::string& map, const std::string& key,
                       const std::string& value);
std::string map_delete(Dialect d, const std::string& map, const std::string& key);
std::string perf_submit(Dialect d, const std::string& map, const std::string& ctx,
                        const std::string& data, const std::string& size);
std::string get_stackid(Dialect d, const std::string& map, const std::string& ctx,
                        const std::string& flags);
// The current thread's slot of a task storage map (NULL: none and not created).
std::string task_storage_get(Dialect d, const std::string& map, const std::string& flags);
// Adds 1 to a Counter map: in plain C one atomic add to the array's value, whose address the
// loader puts into the program (BPF_PSEUDO_MAP_VALUE: no lookup); in BCC's dialect a lookup.
// A statement (";"-terminated).
std::string counter_increment(Dialect d, const std::string& map);
// The same in plain C, with its 1 made in place by the prelude's bpfql_count_one, not a
// constant LLVM may share with the hot path's and keep in a register across a call.
std::string plain_counter_add_made_one(const std::string& map);

}  // namespace bpfql::codegen
