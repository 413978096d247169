#include "compiler/codegen/maps.h"

#include <fmt/format.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>

#include "compiler/codegen/c_prelude.h"

namespace bpfql::codegen {

std::string map_declaration(Dialect d, const MapDecl& m) {
  if (d == Dialect::Bcc) {
    switch (m.kind) {
      case MapKind::PercpuArray:
        return fmt::format("BPF_PERCPU_ARRAY({}, {}, {});", m.name, m.value_type, m.entries);
      case MapKind::PercpuHash:
        return fmt::format("BPF_PERCPU_HASH({}, {}, {}, {});", m.name, m.key_type, m.value_type,
                           m.entries);
      case MapKind::PercpuHashOnDemand:
        return fmt::format("BPF_F_TABLE(\"percpu_hash\", {}, {}, {}, {}, BPF_F_NO_PREALLOC);",
                           m.key_type, m.value_type, m.name, m.entries);
      case MapKind::Hash:
        return fmt::format("BPF_HASH({}, {}, {}, {});", m.name, m.key_type, m.value_type,
                           m.entries);
      case MapKind::PerfOutput:
        return fmt::format("BPF_PERF_OUTPUT({});", m.name);
      case MapKind::StackTrace:
        // BPF_STACK_TRACE would round the size up with roundup_pow_of_two(), from
        // <linux/log2.h>, which the compile leaves out (compile_cflags() in
        // runtime/compile/compile_request.h).
        return fmt::format("BPF_TABLE(\"stacktrace\", int, struct bpf_stacktrace, {}, {});",
                           m.name, m.entries);
      case MapKind::TaskStorage:
        return fmt::format("BPF_TASK_STORAGE({}, {});", m.name, m.value_type);
      case MapKind::Counter:
        return fmt::format("BPF_ARRAY({}, u64, 1);", m.name);
    }
  }
  switch (m.kind) {
    case MapKind::PercpuArray:
      return fmt::format("BPFQL_MAP({}, BPF_MAP_TYPE_PERCPU_ARRAY, u32, {}, {}, 0);", m.name,
                         m.value_type, m.entries);
    case MapKind::PercpuHash:
      return fmt::format("BPFQL_MAP({}, BPF_MAP_TYPE_PERCPU_HASH, {}, {}, {}, 0);", m.name,
                         m.key_type, m.value_type, m.entries);
    case MapKind::PercpuHashOnDemand:
      return fmt::format("BPFQL_MAP({}, BPF_MAP_TYPE_PERCPU_HASH, {}, {}, {}, BPF_F_NO_PREALLOC);",
                         m.name, m.key_type, m.value_type, m.entries);
    case MapKind::Hash:
      return fmt::format("BPFQL_MAP({}, BPF_MAP_TYPE_HASH, {}, {}, {}, 0);", m.name, m.key_type,
                         m.value_type, m.entries);
    case MapKind::PerfOutput:  // entries: the loader sets one per possible CPU
      return fmt::format("BPFQL_MAP({}, BPF_MAP_TYPE_PERF_EVENT_ARRAY, int, u32, 0, 0);", m.name);
    case MapKind::StackTrace:
      return fmt::format("BPFQL_MAP({}, BPF_MAP_TYPE_STACK_TRACE, int, struct bpf_stacktrace, {}, 0);",
                         m.name, m.entries);
    case MapKind::TaskStorage:  // the kernel wants no entries and no preallocation
      return fmt::format("BPFQL_MAP({}, BPF_MAP_TYPE_TASK_STORAGE, int, {}, 0, BPF_F_NO_PREALLOC);",
                         m.name, m.value_type);
    case MapKind::Counter:  // the map, and its one value as a variable (c_prelude.h)
      return fmt::format("BPFQL_MAP({0}, BPF_MAP_TYPE_ARRAY, u32, u64, 1, 0); BPFQL_MAP_VALUE({0});",
                         m.name);
  }
  return "";
}

PlanMap plan_map(const MapDecl& m) {
  PlanMap p{m.name, 0, m.key_size, m.value_size, static_cast<uint32_t>(m.entries), 0};
  switch (m.kind) {
    case MapKind::PercpuArray:
      p.type = BPF_MAP_TYPE_PERCPU_ARRAY;
      p.key_size = 4;
      break;
    case MapKind::PercpuHash:
      p.type = BPF_MAP_TYPE_PERCPU_HASH;
      break;
    case MapKind::PercpuHashOnDemand:
      p.type = BPF_MAP_TYPE_PERCPU_HASH;
      p.flags = BPF_F_NO_PREALLOC;
      break;
    case MapKind::Hash:
      p.type = BPF_MAP_TYPE_HASH;
      break;
    case MapKind::PerfOutput:
      p = PlanMap{m.name, BPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, 0, 0};  // 0: one per CPU
      break;
    case MapKind::StackTrace:
      p = PlanMap{m.name, BPF_MAP_TYPE_STACK_TRACE, 4, PERF_MAX_STACK_DEPTH * 8,
                  static_cast<uint32_t>(m.entries), 0};
      break;
    case MapKind::TaskStorage:
      p = PlanMap{m.name, BPF_MAP_TYPE_TASK_STORAGE, 4, m.value_size, 0, BPF_F_NO_PREALLOC};
      break;
    case MapKind::Counter:
      p = PlanMap{m.name, BPF_MAP_TYPE_ARRAY, 4, 8, 1, 0};
      break;
  }
  return p;
}

std::string map_lookup(Dialect d, const std::string& map, const std::string& key) {
  return d == Dialect::Bcc ? fmt::format("{}.lookup({})", map, key)
                           : fmt::format("bpf_map_lookup_elem(&{}, {})", map, key);
}

std::string map_lookup_or_init(Dialect d, const std::string& map, const std::string& key,
                               const std::string& zero) {
  return d == Dialect::Bcc ? fmt::format("{}.lookup_or_try_init({}, {})", map, key, zero)
                           : fmt::format("bpfql_lookup_or_init(&{}, {}, {})", map, key, zero);
}

std::string map_update(Dialect d, const std::string& map, const std::string& key,
                       const std::string& value) {
  return d == Dialect::Bcc ? fmt::format("{}.update({}, {})", map, key, value)
                           : fmt::format("bpf_map_update_elem(&{}, {}, {}, BPF_ANY)", map, key, value);
}

std::string map_delete(Dialect d, const std::string& map, const std::string& key) {
  return d == Dialect::Bcc ? fmt::format("{}.delete({})", map, key)
                           : fmt::format("bpf_map_delete_elem(&{}, {})", map, key);
}

std::string perf_submit(Dialect d, const std::string& map, const std::string& ctx,
                        const std::string& data, const std::string& size) {
  return d == Dialect::Bcc
             ? fmt::format("{}.perf_submit({}, {}, {})", map, ctx, data, size)
             : fmt::format("bpf_perf_event_output({}, &{}, BPF_F_CURRENT_CPU, {}, {})", ctx, map,
                           data, size);
}

std::string get_stackid(Dialect d, const std::string& map, const std::string& ctx,
                        const std::string& flags) {
  return d == Dialect::Bcc ? fmt::format("{}.get_stackid({}, {})", map, ctx, flags)
                           : fmt::format("bpf_get_stackid({}, &{}, {})", ctx, map, flags);
}

std::string task_storage_get(Dialect d, const std::string& map, const std::string& flags) {
  return d == Dialect::Bcc
             ? fmt::format("{}.task_storage_get(bpf_get_current_task_btf(), 0, {})", map, flags)
             : fmt::format("bpf_task_storage_get(&{}, bpf_get_current_task_btf(), 0, {})", map,
                           flags);
}

std::string counter_increment(Dialect d, const std::string& map) {
  if (d == Dialect::Bcc)
    return fmt::format("{{ u32 idx = 0; u64 *n = {}.lookup(&idx); if (n) __sync_fetch_and_add(n, 1); }}",
                       map);
  return fmt::format("__sync_fetch_and_add(&{}, 1);", plain_map_value(map));
}

std::string plain_counter_add_made_one(const std::string& map) {
  return fmt::format("bpfql_count_one(&{});", plain_map_value(map));
}

}  // namespace bpfql::codegen
