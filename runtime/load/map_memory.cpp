// Map memory against the machine's (see map_memory.h).
#include "runtime/load/map_memory.h"

#include <fmt/format.h>
#include <linux/bpf.h>

#include <fstream>
#include <sstream>

namespace bpfql {
namespace {

constexpr uint64_t kEntryOverhead = 64;  // a hash element's header, rounded up

bool per_cpu(uint32_t type) {
  return type == BPF_MAP_TYPE_PERCPU_HASH || type == BPF_MAP_TYPE_PERCPU_ARRAY ||
         type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

std::string gib(uint64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ull << 30));
}

}  // namespace

uint64_t map_memory_bytes(const PlanMap& map, uint32_t possible_cpus) {
  uint64_t value = uint64_t{map.value_size} * (per_cpu(map.type) ? possible_cpus : 1);
  return uint64_t{map.max_entries} * (uint64_t{map.key_size} + value + kEntryOverhead);
}

std::string map_memory_problem(const Plan& plan, uint32_t possible_cpus, uint64_t memory_bytes) {
  if (memory_bytes == 0) return "";
  uint64_t total = 0, largest = 0;
  const PlanMap* biggest = nullptr;
  for (const auto& m : plan.maps) {
    uint64_t bytes = map_memory_bytes(m, possible_cpus);
    total += bytes;
    if (bytes >= largest) largest = bytes, biggest = &m;
  }
  if (total <= memory_bytes / 2 || !biggest) return "";
  return fmt::format(
      "the program's maps could take {} of kernel memory, more than half of this machine's {} "
      "(the largest, {}: {} entries of {} + {} bytes{}): lower max_entries, or make keys smaller "
      "(a smaller strlen)",
      gib(total), gib(memory_bytes), biggest->name, biggest->max_entries, biggest->key_size,
      biggest->value_size, per_cpu(biggest->type) ? fmt::format(" × {} CPUs", possible_cpus) : "");
}

uint64_t machine_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (!line.starts_with("MemTotal:")) continue;
    std::istringstream in(line.substr(9));
    uint64_t kib = 0;
    in >> kib;
    return kib * 1024;
  }
  return 0;
}

}  // namespace bpfql
