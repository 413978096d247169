// Copying a query's map entries into the reloaded program's maps (see carry_state.h).
#include "runtime/load/carry_state.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace bpfql {
namespace {

// The maps that hold a query's state, in a fixed order (so that two Plans of the same query
// pair them up): values, each histogram's, dropped keys, open span begins.
std::vector<std::string> state_maps(const PlanQuery& q) {
  std::vector<std::string> maps;
  if (!q.value_map.empty()) maps.push_back(q.value_map);
  for (const auto& a : q.aggregates)
    if (!a.map_name.empty()) maps.push_back(a.map_name);
  if (!q.dropped_map.empty()) maps.push_back(q.dropped_map);
  if (!q.open_span_map.empty()) maps.push_back(q.open_span_map);
  return maps;
}

bool is_per_cpu(uint32_t type) {
  return type == BPF_MAP_TYPE_PERCPU_HASH || type == BPF_MAP_TYPE_PERCPU_ARRAY ||
         type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

std::string copy_map(int from, int to, const std::string& name) {
  bpf_map_info a{}, b{};
  uint32_t len = sizeof a;
  if (bpf_obj_get_info_by_fd(from, &a, &len) != 0) return fmt::format("map {}: {}", name, std::strerror(errno));
  len = sizeof b;
  if (bpf_obj_get_info_by_fd(to, &b, &len) != 0) return fmt::format("map {}: {}", name, std::strerror(errno));
  if (a.type != b.type || a.key_size != b.key_size || a.value_size != b.value_size ||
      a.max_entries != b.max_entries)
    return fmt::format("map {} changed shape", name);
  int cpus = is_per_cpu(a.type) ? libbpf_num_possible_cpus() : 1;
  if (cpus <= 0) return "cannot count the possible CPUs";
  size_t value_bytes = is_per_cpu(a.type) ? ((a.value_size + 7) / 8) * 8 * static_cast<size_t>(cpus)
                                          : a.value_size;
  std::vector<char> key(a.key_size), next(a.key_size), value(value_bytes);
  void* prev = nullptr;
  while (bpf_map_get_next_key(from, prev, next.data()) == 0) {
    std::swap(key, next);
    prev = key.data();
    if (bpf_map_lookup_elem(from, key.data(), value.data()) != 0) {
      if (errno == ENOENT) continue;  // deleted meanwhile (a span that ended)
      return fmt::format("map {}: lookup: {}", name, std::strerror(errno));
    }
    if (bpf_map_update_elem(to, key.data(), value.data(), BPF_ANY) != 0)
      return fmt::format("map {}: update: {}", name, std::strerror(errno));
  }
  return "";
}

}  // namespace

std::string carry_query_state(const PlanQuery& from, const BpfObject& old_bpf, const PlanQuery& to,
                              const BpfObject& new_bpf) {
  if (!from.stack_map.empty() || !to.stack_map.empty())
    return "its keys are stack ids of the old program's stack map";
  std::vector<std::string> a = state_maps(from), b = state_maps(to);
  if (a.size() != b.size()) return "its maps changed";
  for (size_t i = 0; i < a.size(); ++i) {
    int f = old_bpf.map_fd(a[i]), t = new_bpf.map_fd(b[i]);
    if (f < 0 || t < 0) return fmt::format("map {} not found", f < 0 ? a[i] : b[i]);
    if (auto e = copy_map(f, t, b[i]); !e.empty()) return e;
  }
  return "";
}

}  // namespace bpfql
