// How much kernel memory a Plan's maps may take at most, against the machine's memory: a query
// may ask for max_entries up to 10,000,000 with keys of up to 512 bytes and per-CPU values, which
// on some machines is more memory than there is. Refused before anything is created.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/plan.h"

namespace bpfql {

// The most bytes the map can hold: entries × (key + value × CPUs for per-CPU maps + the
// kernel's per-entry overhead, counted as 64 bytes).
uint64_t map_memory_bytes(const PlanMap& map, uint32_t possible_cpus);

// "" when all of the Plan's maps together fit in half of `memory_bytes`; else a message naming
// the largest map and what to lower.
std::string map_memory_problem(const Plan& plan, uint32_t possible_cpus, uint64_t memory_bytes);

// MemTotal from /proc/meminfo, in bytes (0 when unknown: then nothing is refused).
uint64_t machine_memory_bytes();

}  // namespace bpfql
